package upstream

import (
	"net/url"
	"strings"
)

// Credentials in a server URL (userinfo, query values such as ?api_key=…, a token in the path
// such as /mcp/sk-live-…/ or /v1/<uuid>/sse, a fragment) must not leak into anything a cell, a
// client or a log can read: errors from the HTTP stack quote the URL. Every error that leaves a
// server's supervisor or a call goes through scrub.

// redactor replaces a URL's credentials in text.
type redactor struct {
	url     string   // the URL as configured
	safe    string   // the URL with credentials replaced
	secrets []string // credential values, raw and escaped, longest first
}

const redacted = "REDACTED"

func newRedactor(raw string) *redactor {
	u, err := url.Parse(raw)
	if err != nil || raw == "" {
		return &redactor{}
	}
	r := &redactor{url: raw}
	add := func(v string) {
		if len(v) >= 3 { // shorter values would redact ordinary words
			r.secrets = append(r.secrets, v, url.QueryEscape(v), url.PathEscape(v))
		}
	}
	if u.User != nil {
		add(u.User.Username())
		if p, ok := u.User.Password(); ok {
			add(p)
		}
		u.User = url.User(redacted)
	}
	if segs := strings.Split(u.EscapedPath(), "/"); len(segs) > 0 {
		changed := false
		for i, seg := range segs {
			if v, err := url.PathUnescape(seg); err == nil && secretSegment(v) {
				add(v)
				add(seg)
				segs[i], changed = redacted, true
			}
		}
		if changed {
			u.RawPath = strings.Join(segs, "/")
			u.Path, _ = url.PathUnescape(u.RawPath)
		}
	}
	if u.Fragment != "" {
		add(u.Fragment)
		u.Fragment, u.RawFragment = redacted, ""
	}
	q := u.Query()
	for k, vs := range q {
		for i, v := range vs {
			add(v)
			vs[i] = redacted
		}
		q[k] = vs
	}
	if len(q) > 0 {
		u.RawQuery = q.Encode()
	}
	r.safe = u.String()
	for i := 1; i < len(r.secrets); i++ { // longest first, so a prefix never leaves a tail
		for j := i; j > 0 && len(r.secrets[j]) > len(r.secrets[j-1]); j-- {
			r.secrets[j], r.secrets[j-1] = r.secrets[j-1], r.secrets[j]
		}
	}
	return r
}

// credentialPrefixes start well-known API keys and tokens.
var credentialPrefixes = []string{"sk-", "sk_", "pk_", "rk_", "ghp_", "gho_", "ghs_", "ghu_", "github_pat_",
	"glpat-", "xoxa-", "xoxb-", "xoxp-", "xoxr-", "AKIA", "AIza", "ya29.", "eyJ", "key-", "token-"}

// secretSegment reports whether a path segment looks like a credential rather than a route:
// a known key prefix, or a long token that mixes letters and digits (uuids included). Routes
// (mcp, sse, v1, api, a tenant's name) stay readable, and are not redacted where they appear
// elsewhere in a message.
func secretSegment(seg string) bool {
	if len(seg) < 12 {
		return false
	}
	for _, p := range credentialPrefixes {
		if strings.HasPrefix(seg, p) {
			return true
		}
	}
	letters, digits := 0, 0
	for _, c := range seg {
		switch {
		case '0' <= c && c <= '9':
			digits++
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
			letters++
		}
	}
	return len(seg) >= 32 || len(seg) >= 16 && letters > 0 && digits > 0
}

// String redacts s.
func (r *redactor) String(s string) string {
	if r == nil || r.url == "" {
		return s
	}
	s = strings.ReplaceAll(s, r.url, r.safe)
	for _, v := range r.secrets {
		s = strings.ReplaceAll(s, v, redacted)
	}
	return s
}

// scrubbed is an error whose text had credentials removed; it still wraps the original so
// errors.Is keeps working.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// scrub redacts err's text.
func (r *redactor) scrub(err error) error {
	if err == nil || r == nil || r.url == "" {
		return err
	}
	msg := err.Error()
	if red := r.String(msg); red != msg {
		return &scrubbed{red, err}
	}
	return err
}
