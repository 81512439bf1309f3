// Package trajectory records what a run did (E2): every control call, direct call and nested
// call as a real tool call, with approvals and progress updates, as JSON Lines a person can audit
// (`codemode trace` prints them as a tree). Events are bounded and secrets are redacted before
// they leave the process: a trajectory is a support artefact, not a data dump.
package trajectory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/codemode-go/codemode/api"
)

// Bounds on what one event carries.
const (
	// MaxStringBytes clips every string value inside inputs and results.
	MaxStringBytes = 2048
	// MaxValueBytes bounds one input or result after clipping; a larger value is replaced by a
	// preview.
	MaxValueBytes = 16 << 10
	// maxDepth bounds nesting; deeper values are elided.
	maxDepth = 32
	// maxErrorBytes clips error messages.
	maxErrorBytes = 4096
)

const redacted = "[redacted]"

// secretKey matches object keys whose values are credentials.
var secretKey = regexp.MustCompile(`(?i)(pass(word|wd|phrase)?|secret|token|api[-_]?key|apikey|authorization|auth[-_]?header|cookie|credential|private[-_]?key|session[-_]?key|bearer)$`)

// secretValue matches credential shapes inside strings: provider keys, bearer tokens, GitHub and
// Slack tokens, AWS access keys, userinfo in URLs, key-like query parameters.
var secretValue = regexp.MustCompile(`(?i)\b(sk-(ant-|proj-)?[A-Za-z0-9_\-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|xox[abprs]-[A-Za-z0-9\-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{30,})|(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{8,}|(://)[^/\s:@]+:[^/\s@]+@|([?&](api[-_]?key|key|token|access[-_]?token|secret|password|sig|signature)=)[^&#\s"]+`)

// Sanitize returns ev with its inputs, result and error bounded and credentials redacted.
func Sanitize(ev api.TrajectoryEvent) api.TrajectoryEvent {
	ev.Input = Value(ev.Input)
	ev.OriginalInput = Value(ev.OriginalInput)
	ev.Result = Value(ev.Result)
	ev.Error = clipString(RedactString(ev.Error), maxErrorBytes)
	if ev.Approval != nil {
		a := *ev.Approval
		a.Prompt = clipString(RedactString(a.Prompt), MaxStringBytes)
		a.Reason = clipString(RedactString(a.Reason), MaxStringBytes)
		ev.Approval = &a
	}
	if ev.Update != nil {
		u := *ev.Update
		u.Text = clipString(RedactString(u.Text), MaxStringBytes)
		if len(u.Data) > 0 {
			u.Data = fmt.Sprintf("[%d bytes of %s]", len(u.Data), u.MimeType)
		}
		u.Resource = Value(u.Resource)
		ev.Update = &u
	}
	return ev
}

// Value bounds and redacts one JSON value. Invalid JSON becomes a JSON string of its (redacted,
// clipped) text, so a trajectory line is always valid JSON.
func Value(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		b, _ := json.Marshal(clipString(RedactString(string(raw)), MaxStringBytes))
		return b
	}
	v = walk(v, "", 0)
	b, err := marshal(v)
	if err != nil {
		return json.RawMessage(`"[unencodable value]"`)
	}
	if len(b) > MaxValueBytes {
		preview := clipString(string(b), MaxStringBytes)
		b, _ = marshal(map[string]any{"truncated": true, "bytes": len(b), "preview": preview})
	}
	return b
}

func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func walk(v any, key string, depth int) any {
	if key != "" && secretKey.MatchString(key) {
		if s, ok := v.(string); ok && s == "" {
			return s
		}
		return redacted
	}
	switch x := v.(type) {
	case string:
		return clipString(RedactString(x), MaxStringBytes)
	case map[string]any:
		if depth >= maxDepth {
			return "[nested too deeply]"
		}
		for k, e := range x {
			x[k] = walk(e, k, depth+1)
		}
		return x
	case []any:
		if depth >= maxDepth {
			return "[nested too deeply]"
		}
		for i, e := range x {
			x[i] = walk(e, "", depth+1)
		}
		return x
	}
	return v
}

// triggers are substrings every match of secretValue contains (case variants included): most
// strings contain none, and a few substring searches cost far less than the regexp.
var triggers = []string{"sk-", "gh", "xox", "AKIA", "AIza", "earer", "EARER", "asic", "ASIC", "@", "="}

// RedactString replaces credential shapes in free text.
func RedactString(s string) string {
	hit := false
	for _, t := range triggers {
		if strings.Contains(s, t) {
			hit = true
			break
		}
	}
	if !hit || !secretValue.MatchString(s) {
		return s
	}
	return secretValue.ReplaceAllStringFunc(s, func(m string) string {
		switch {
		case strings.HasPrefix(m, "://"):
			return "://" + redacted + "@"
		case strings.HasPrefix(m, "?") || strings.HasPrefix(m, "&"):
			if i := strings.IndexByte(m, '='); i >= 0 {
				return m[:i+1] + redacted
			}
		case len(m) > 7 && strings.EqualFold(m[:7], "bearer "):
			return m[:7] + redacted
		case len(m) > 6 && strings.EqualFold(m[:6], "basic "):
			return m[:6] + redacted
		}
		return redacted
	})
}

// clipString shortens s to at most n bytes on a rune boundary, saying how much was cut.
func clipString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("…[%d bytes clipped]", len(s)-cut)
}
