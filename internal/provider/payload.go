package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// toolNames lists the names of the tools in a serialized request body, in order: OpenAI's
// `tools[].function.name` (or `custom.name`), Anthropic's `tools[].name`. A tool entry whose
// name cannot be found is listed as "" so that a check expecting exact names fails closed.
// It decodes with encoding/json, which, like the providers' servers, keeps the last of
// duplicated keys.
func toolNames(body []byte) ([]string, error) {
	if len(body) == 0 {
		return nil, nil
	}
	var b struct {
		Tools []struct {
			Name     *string `json:"name"`
			Function *struct {
				Name string `json:"name"`
			} `json:"function"`
			Custom *struct {
				Name string `json:"name"`
			} `json:"custom"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(b.Tools))
	for _, t := range b.Tools {
		switch {
		case t.Function != nil:
			names = append(names, t.Function.Name)
		case t.Custom != nil:
			names = append(names, t.Custom.Name)
		case t.Name != nil:
			names = append(names, *t.Name)
		default:
			names = append(names, "")
		}
	}
	return names, nil
}

// snapshotLimit bounds one full-redacted payload log record.
const snapshotLimit = 32 << 10

// redactedSnapshot renders body as JSON for a debug log: credentials removed (keys that name
// one, strings that look like one, and the configured API key wherever it appears), long
// strings clipped, and the whole bounded by limit bytes. It tightens the string clip until the
// JSON fits, and cuts the text only as a last resort.
func redactedSnapshot(body []byte, secret string, limit int) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return clip(redactText(clean(string(body), limit), secret), limit)
	}
	for _, n := range []int{400, 120, 40, 12} {
		out, err := marshalSorted(redactValue(v, secret, n, 0))
		if err == nil && len(out) <= limit {
			return out
		}
	}
	out, _ := marshalSorted(redactValue(v, secret, 12, 0))
	return clip(out, limit)
}

const redacted = "[redacted]"

func redactValue(v any, secret string, maxStr, depth int) any {
	if depth > 64 {
		return "[too deep]"
	}
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, val := range x {
			if sensitiveKey(k) {
				m[k] = redacted
				continue
			}
			m[k] = redactValue(val, secret, maxStr, depth+1)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, val := range x {
			a[i] = redactValue(val, secret, maxStr, depth+1)
		}
		return a
	case string:
		if looksSecret(x) {
			return redacted
		}
		return clipString(redactText(x, secret), maxStr)
	}
	return v
}

func redactText(s, secret string) string {
	if len(secret) >= 4 {
		s = strings.ReplaceAll(s, secret, redacted)
	}
	return s
}

func sensitiveKey(k string) bool {
	k = strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(k))
	switch k {
	case "apikey", "xapikey", "authorization", "proxyauthorization", "password", "passwd", "secret",
		"clientsecret", "token", "accesstoken", "refreshtoken", "idtoken", "bearer", "cookie", "setcookie", "privatekey":
		return true
	}
	return false
}

// looksSecret catches the common API-key shapes even where no key name says so.
func looksSecret(s string) bool {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(strings.ToLower(t), "bearer ") {
		return true
	}
	if strings.ContainsAny(t, " \n\t") || len(t) < 20 {
		return false
	}
	for _, p := range []string{"sk-", "sk_", "sess-", "xoxb-", "xoxp-", "ghp_", "gho_", "github_pat_", "AKIA", "AIza"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

func clipString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut < len(s) && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…[" + strconv.Itoa(len(s)-cut) + " more bytes]"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return clipString(s, n-32)
}

// marshalSorted is json.Marshal without HTML escaping (the log is read by people).
func marshalSorted(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// errorMessage finds the human explanation in an error body: `error.message` (OpenAI,
// Anthropic), `error` as a string (Ollama), `message` or `detail` (vLLM, FastAPI), else the
// start of the body itself (an HTML page from a wrong base URL).
func errorMessage(body []byte) string {
	var b map[string]json.RawMessage
	if json.Unmarshal(body, &b) == nil {
		if raw, ok := b["error"]; ok {
			var s string
			if json.Unmarshal(raw, &s) == nil {
				return s
			}
			var o struct {
				Message string `json:"message"`
			}
			if json.Unmarshal(raw, &o) == nil && o.Message != "" {
				return o.Message
			}
		}
		for _, k := range []string{"message", "detail"} {
			if raw, ok := b[k]; ok {
				var s string
				if json.Unmarshal(raw, &s) == nil {
					return s
				}
				return string(raw)
			}
		}
		keys := make([]string, 0, len(b))
		for k := range b {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return fmt.Sprintf("a JSON body with keys %v", keys)
	}
	return strings.Join(strings.Fields(stripTags(string(body[:min(len(body), 2000)]))), " ")
}

// stripTags drops <...> so an HTML error page reads as its text.
func stripTags(s string) string {
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>':
			in = false
			b.WriteByte(' ')
		case !in:
			b.WriteRune(r)
		}
	}
	return b.String()
}
