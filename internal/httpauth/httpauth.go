// Package httpauth holds the rules of the HTTP listener's credentials and origins that the
// configuration validates and the listener enforces: one place, so a token the file accepts is
// a token the guard accepts.
package httpauth

import (
	"net/url"
	"strings"
)

// TokenEnv is the environment variable that supplies serve.http.token when the file has none.
const TokenEnv = "CODEMODE_TOKEN"

// CheckToken returns why token cannot be a bearer token, or "". The same rule applies to
// CODEMODE_TOKEN.
func CheckToken(token string) string {
	if len(token) < 16 {
		return "a token must be at least 16 characters (use a random one, e.g. `openssl rand -hex 32`)"
	}
	if len(token) > 4096 {
		return "a token must be at most 4096 characters"
	}
	for i := 0; i < len(token); i++ {
		if c := token[i]; c <= ' ' || c > '~' {
			return "a token must be printable ASCII without spaces"
		}
	}
	return ""
}

// NormalizeOrigin returns origin as browsers send it (scheme://host[:port], lower case, no
// default port), or why it is not an origin.
func NormalizeOrigin(origin string) (string, string) {
	u, err := url.Parse(origin)
	switch {
	case err != nil || u.Scheme == "" || u.Host == "":
		return "", "expected an origin such as \"https://app.example.com\""
	case u.Scheme != "http" && u.Scheme != "https":
		return "", "an origin must use http or https"
	case u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return "", "an origin is scheme://host[:port] only, without user, path, query or fragment"
	}
	host := strings.ToLower(u.Host)
	if p := u.Port(); (u.Scheme == "http" && p == "80") || (u.Scheme == "https" && p == "443") {
		host = strings.TrimSuffix(host, ":"+p)
	}
	return u.Scheme + "://" + host, ""
}
