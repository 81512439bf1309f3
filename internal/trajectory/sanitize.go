// Package trajectory records what a run did (E2): every control call, direct call and nested
// call as a real tool call, with approvals and progress updates, as JSON Lines a person can audit
// (`codemode trace` prints them as a tree). Events are bounded and secrets are redacted before
// they leave the process: a trajectory is a support artefact, not a data dump.
package trajectory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/codemode-go/codemode/api"
)

// Bounds on what one event carries.
const (
	// MaxStringBytes clips every string value (and object key) inside inputs and results.
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

// keyWords are lower-case substrings every match of secretKey contains: a key without any of
// them needs no regexp.
var keyWords = newWordSet("pass", "secret", "token", "key", "auth", "cookie", "credential", "bearer")

// secretValue matches credential shapes inside strings: provider keys, bearer tokens, GitHub and
// Slack tokens, AWS access keys, userinfo in URLs, key-like query parameters.
var secretValue = regexp.MustCompile(`(?i)\b(sk-(ant-|proj-)?[A-Za-z0-9_\-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|xox[abprs]-[A-Za-z0-9\-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{30,})|(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{8,}|(://)[^/\s:@]+:[^/\s@]+@|([?&](api[-_]?key|key|token|access[-_]?token|secret|password|sig|signature)=)[^&#\s"]+`)

// valueWords are lower-case substrings every match of secretValue contains, in any case: most
// strings contain none, and one pass over a string costs far less than the regexp.
var valueWords = newWordSet("sk-", "gh", "xox", "akia", "aiza", "bearer", "basic", "@", "=")

// Sanitize returns ev with its inputs, result and error bounded and credentials redacted.
func Sanitize(ev api.TrajectoryEvent) api.TrajectoryEvent {
	if ev.Kind == api.EventControl && ev.Tool == "exec" {
		ev.Input, ev.OriginalInput = maskCellInput(ev.Input), maskCellInput(ev.OriginalInput)
	}
	ev.Input = Value(ev.Input)
	ev.OriginalInput = Value(ev.OriginalInput)
	ev.Result = Value(ev.Result)
	ev.Error = redactClip(ev.Error, maxErrorBytes)
	ev.Title = redactClip(ev.Title, MaxStringBytes)
	if ev.Approval != nil {
		a := *ev.Approval
		a.Prompt = redactClip(a.Prompt, MaxStringBytes)
		a.Reason = redactClip(a.Reason, MaxStringBytes)
		ev.Approval = &a
	}
	if ev.Update != nil {
		u := *ev.Update
		u.Text = redactClip(u.Text, MaxStringBytes)
		if len(u.Data) > 0 {
			u.Data = fmt.Sprintf("[%d bytes of %s]", len(u.Data), u.MimeType)
		}
		u.Resource = Value(u.Resource)
		ev.Update = &u
	}
	return ev
}

// Value bounds and redacts one JSON value, keeping the order of object keys. Invalid JSON becomes
// a JSON string of its (redacted, clipped) text, so a trajectory line is always valid JSON.
//
// Most values hold nothing to redact or clip: plain proves that in one pass without decoding,
// and those are returned as they are (compacted). The rest are rewritten token by token.
func Value(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	if b, ok := plain(raw); ok {
		return b
	}
	b, err := rewrite(raw)
	if err != nil {
		s, _ := marshal(redactClip(strings.ToValidUTF8(string(raw), "\uFFFD"), MaxStringBytes))
		return s
	}
	if len(b) > MaxValueBytes {
		preview := clipString(string(b), MaxStringBytes)
		b, _ = marshal(map[string]any{"truncated": true, "bytes": len(b), "preview": preview})
	}
	return b
}

// plain reports whether raw is a valid JSON value that Value would leave unchanged but for
// whitespace and the spelling of escapes: within the size bound, valid UTF-8, no string or key
// too long, nesting within bounds, no key naming a credential and no string shaped like one
// (strings are checked as they decode: an escape cannot hide a credential). It returns raw
// compacted.
func plain(raw []byte) ([]byte, bool) {
	if len(raw) > MaxValueBytes || !utf8.Valid(raw) || !json.Valid(raw) {
		return nil, false
	}
	depth, spaces := 0, false
	var scratch []byte
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '"':
			end := stringEnd(raw, i+1) // json.Valid: the string is well formed
			s := raw[i+1 : end]
			if bytes.IndexByte(s, '\\') >= 0 {
				scratch = unescape(scratch[:0], s)
				s = scratch
			}
			if len(s) > MaxStringBytes {
				return nil, false
			}
			i = end
			k := i + 1
			for k < len(raw) && isSpace(raw[k]) {
				k++
			}
			if k < len(raw) && raw[k] == ':' && hasAny(s, keyWords) && secretKey.Match(s) {
				return nil, false
			}
			if hasAny(s, valueWords) && secretValue.Match(s) {
				return nil, false
			}
		case '{', '[':
			if depth >= maxDepth {
				return nil, false
			}
			depth++
		case '}', ']':
			depth--
		case ' ', '\t', '\n', '\r':
			spaces = true
		}
	}
	if spaces {
		var b bytes.Buffer
		if json.Compact(&b, raw) != nil {
			return nil, false
		}
		return b.Bytes(), true
	}
	return raw, true
}

// stringEnd is the index of the quote that closes the JSON string starting at i.
func stringEnd(raw []byte, i int) int {
	for {
		j := bytes.IndexAny(raw[i:], `"\\`)
		if j < 0 {
			return len(raw) - 1
		}
		if raw[i+j] == '"' {
			return i + j
		}
		i += j + 2 // a backslash and the character it escapes
	}
}

// unescape appends the decoded content of a well-formed JSON string body to dst, as
// encoding/json decodes it (a lone surrogate becomes U+FFFD).
func unescape(dst, s []byte) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			dst = append(dst, c)
			continue
		}
		i++
		switch s[i] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := hex4(s[i+1:])
			i += 4
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if i+6 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
					r2 = hex4(s[i+3:])
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
		default: // " \ /
			dst = append(dst, s[i])
		}
	}
	return dst
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// hasAny reports whether s contains one of words (lower-case ASCII) in any letter case. It
// looks at each byte once: only bytes that start a word (in either case) are compared further.
func hasAny[S ~string | ~[]byte](s S, words *wordSet) bool {
	for i := 0; i < len(s); i++ {
		for _, w := range words.first[s[i]] {
			if len(s)-i < len(w) {
				continue
			}
			j := 1
			for j < len(w) && lower(s[i+j]) == w[j] {
				j++
			}
			if j == len(w) {
				return true
			}
		}
	}
	return false
}

// wordSet indexes lower-case ASCII words by their first byte, in both cases.
type wordSet struct{ first [256][]string }

func newWordSet(words ...string) *wordSet {
	ws := &wordSet{}
	for _, w := range words {
		c := w[0]
		ws.first[c] = append(ws.first[c], w)
		if 'a' <= c && c <= 'z' {
			ws.first[c-'a'+'A'] = append(ws.first[c-'a'+'A'], w)
		}
	}
	return ws
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

var errTrailing = errors.New("data after the JSON value")

// rewrite re-encodes raw token by token: credentials under secret keys and inside strings are
// redacted, strings and keys clipped, containers nested too deeply elided, key order kept.
func rewrite(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	w := &rewriter{dec: dec}
	if err := w.value("", 0); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errTrailing
	}
	return w.out.Bytes(), nil
}

type rewriter struct {
	dec *json.Decoder
	out bytes.Buffer
}

func (w *rewriter) value(key string, depth int) error {
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	if key != "" && hasAny(key, keyWords) && secretKey.MatchString(key) {
		if s, ok := tok.(string); ok && s == "" {
			w.out.WriteString(`""`)
			return nil
		}
		w.str(redacted)
		return w.skip(tok)
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= maxDepth {
			w.str("[nested too deeply]")
			return w.skip(tok)
		}
		if t == '{' {
			w.out.WriteByte('{')
			for first := true; w.dec.More(); first = false {
				k, err := w.dec.Token()
				if err != nil {
					return err
				}
				ks, _ := k.(string)
				if !first {
					w.out.WriteByte(',')
				}
				w.str(ks)
				w.out.WriteByte(':')
				if err := w.value(ks, depth+1); err != nil {
					return err
				}
			}
			w.out.WriteByte('}')
		} else {
			w.out.WriteByte('[')
			for first := true; w.dec.More(); first = false {
				if !first {
					w.out.WriteByte(',')
				}
				if err := w.value("", depth+1); err != nil {
					return err
				}
			}
			w.out.WriteByte(']')
		}
		_, err := w.dec.Token() // the closing delimiter
		return err
	case string:
		w.str(t)
	case json.Number:
		w.out.WriteString(t.String())
	case bool:
		w.out.WriteString(map[bool]string{true: "true", false: "false"}[t])
	case nil:
		w.out.WriteString("null")
	}
	return nil
}

// str writes s redacted, clipped and encoded.
func (w *rewriter) str(s string) {
	b, _ := marshal(redactClip(s, MaxStringBytes))
	w.out.Write(b)
}

// skip consumes the rest of a value whose first token was tok.
func (w *rewriter) skip(tok json.Token) error {
	if d, ok := tok.(json.Delim); !ok || (d != '{' && d != '[') {
		return nil
	}
	for open := 1; open > 0; {
		t, err := w.dec.Token()
		if err != nil {
			return err
		}
		if d, ok := t.(json.Delim); ok {
			if d == '{' || d == '[' {
				open++
			} else {
				open--
			}
		}
	}
	return nil
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

// RedactString replaces credential shapes in free text.
func RedactString(s string) string {
	if !hasAny(s, valueWords) || !secretValue.MatchString(s) {
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

// redactClip is clipString(RedactString(s), n) without scanning all of a long s: only the
// first n bytes are kept, and a credential that starts there is seen whole by the redaction
// as long as it is shorter than the lookahead (every shape secretValue knows is).
func redactClip(s string, n int) string {
	const lookahead = 512
	if len(s) <= n+lookahead {
		return clipString(RedactString(s), n)
	}
	head := s[:runeCut(s, n+lookahead)]
	r := RedactString(head)
	cut := runeCut(r, n)
	return r[:cut] + fmt.Sprintf("…[%d bytes clipped]", len(s)-len(head)+len(r)-cut)
}

// runeCut is the largest cut ≤ n (and ≤ len(s)) on a rune boundary of s.
func runeCut(s string, n int) int {
	if n >= len(s) {
		return len(s)
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

// clipString shortens s to at most n bytes on a rune boundary, saying how much was cut.
func clipString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := runeCut(s, n)
	return s[:cut] + fmt.Sprintf("…[%d bytes clipped]", len(s)-cut)
}
