package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// toolNames lists the names of the tools in a serialized request body, in order: OpenAI's
// `tools[].function.name` (or `custom.name`), Anthropic's `tools[].name`. A tool entry whose
// name cannot be found is listed as "" so that a check expecting exact names fails closed.
//
// It runs on every request, so it uses gjson, which skips the messages instead of decoding
// them (encoding/json would make long histories cost milliseconds). JSON parsers disagree on
// duplicated keys (first or last wins), so a duplicated key on the path to a name is an error:
// the check must never see a different tool list than the server. For the same reason a body
// that is not UTF-8 is an error: gjson keeps invalid bytes in a string where other decoders
// (encoding/json) read U+FFFD.
func toolNames(body []byte) ([]string, error) {
	if len(body) == 0 {
		return nil, nil
	}
	if !utf8.Valid(body) {
		return nil, errors.New("the body is not valid UTF-8")
	}
	if !gjson.ValidBytes(body) {
		return nil, errors.New("the body is not valid JSON")
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return nil, errors.New("the body is not a JSON object")
	}
	tools, err := uniqueKey(root, "tools")
	if err != nil {
		return nil, err
	}
	names := []string{}
	if !tools.Exists() || tools.Type == gjson.Null {
		return names, nil
	}
	if !tools.IsArray() {
		return nil, errors.New("tools is not an array")
	}
	for _, t := range tools.Array() {
		if !t.IsObject() {
			return nil, errors.New("a tools entry is not an object")
		}
		name, err := toolName(t)
		if err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	return names, nil
}

// toolName is function.name, custom.name or name, in that order of preference.
func toolName(t gjson.Result) (string, error) {
	for _, wrapper := range []string{"function", "custom"} {
		w, err := uniqueKey(t, wrapper)
		if err != nil {
			return "", err
		}
		if w.Exists() && w.Type != gjson.Null {
			if !w.IsObject() {
				return "", fmt.Errorf("a tool's %s is not an object", wrapper)
			}
			n, err := uniqueKey(w, "name")
			if err != nil || n.Type != gjson.String {
				return "", err
			}
			return n.Str, nil
		}
	}
	n, err := uniqueKey(t, "name")
	if err != nil || n.Type != gjson.String {
		return "", err
	}
	return n.Str, nil
}

// uniqueKey returns the member key of object o, refusing a key that appears twice.
func uniqueKey(o gjson.Result, key string) (gjson.Result, error) {
	var found gjson.Result
	var dup bool
	o.ForEach(func(k, v gjson.Result) bool {
		if k.Str == key {
			if found.Exists() {
				dup = true
				return false
			}
			found = v
		}
		return true
	})
	if dup {
		return gjson.Result{}, fmt.Errorf("key %q appears twice", key)
	}
	return found, nil
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
	v = redactValue(v, secret, 0)
	for _, n := range []int{400, 120, 40, 12} {
		out, err := marshalSorted(clipValue(v, n))
		if err == nil && len(out) <= limit {
			return out
		}
	}
	out, _ := marshalSorted(clipValue(v, 12))
	return clip(out, limit)
}

const redacted = "[redacted]"

// redactValue removes credentials from a decoded JSON value: values of keys that name one, and
// secrets inside strings. It runs before any clipping, so a clip cannot leave half a key.
func redactValue(v any, secret string, depth int) any {
	if depth > 64 {
		return "[too deep]"
	}
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, val := range x {
			if sensitiveKey(k) {
				m[redactText(k, secret)] = redacted
				continue
			}
			m[redactText(k, secret)] = redactValue(val, secret, depth+1)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, val := range x {
			a[i] = redactValue(val, secret, depth+1)
		}
		return a
	case string:
		if len(x) > redactWindow {
			// Only the start can be shown; redacting just that keeps huge strings cheap. The
			// window reaches past the longest clip, so a key that starts inside the shown part
			// is matched whole.
			return long{redactText(x[:runeCut(x, redactWindow)], secret), len(x)}
		}
		return redactText(x, secret)
	}
	return v
}

// redactWindow is how much of a long string is redacted: the longest clip plus room for a key.
const redactWindow = 400 + 256

// long is the redacted start of a string of n bytes.
type long struct {
	s string
	n int
}

// clipValue copies v with every string clipped to maxStr bytes.
func clipValue(v any, maxStr int) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, val := range x {
			m[k] = clipValue(val, maxStr)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, val := range x {
			a[i] = clipValue(val, maxStr)
		}
		return a
	case string:
		return clipString(x, maxStr)
	case long:
		cut := runeCut(x.s, maxStr)
		return x.s[:cut] + "…[" + strconv.Itoa(x.n-cut) + " more bytes]"
	}
	return v
}

// runeCut is the largest cut <= n that does not split a UTF-8 sequence.
func runeCut(s string, n int) int {
	if n >= len(s) {
		return len(s)
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return n
}

// secretPatterns find credentials inside free text: bearer tokens and the common API-key shapes.
var secretPatterns = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}`),
	regexp.MustCompile(`\b(?:sk|rk|pk)[-_][A-Za-z0-9_-]{16,}`),
	regexp.MustCompile(`\b(?:sess-|xox[bpas]-|ghp_|gho_|ghs_|github_pat_|glpat-)[A-Za-z0-9_-]{16,}`),
	regexp.MustCompile(`\b(?:AKIA|ASIA)[A-Z0-9]{16}\b`),
	regexp.MustCompile(`\bAIza[A-Za-z0-9_-]{30,}`),
}

func redactText(s, secret string) string {
	if len(secret) >= 4 {
		s = strings.ReplaceAll(s, secret, redacted)
	}
	for _, re := range secretPatterns {
		s = re.ReplaceAllString(s, redacted)
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

func clipString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := runeCut(s, n)
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
