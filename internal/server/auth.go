package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/oauth"
)

// Authentication (issue 19 items 3–4, issue 18 item 8). Every request with credentials names
// one principal, from one parse of its Authorization header: the scheme is matched without
// regard to case and the token is the header's second field (`bearer TOKEN`, `Bearer  TOKEN`
// and `Bearer TOKEN` are the same credential), exactly as go-sdk's own bearer middleware reads
// it. A token is first compared with every principal's static token (SHA-256 digests compared
// in constant time, all of them, so neither content, length nor which principal leaks through
// timing), then, when serve.oauth is set, validated as an OAuth access token.

// PrincipalToken is a serve.principals entry's token, resolved from its Secret.
type PrincipalToken struct {
	Name  string
	Token string
}

type staticToken struct {
	digest [32]byte
	name   string // "default" for the legacy serve.http.token
}

// authenticator maps credentials onto identities.
type authenticator struct {
	s      *Server
	tokens []staticToken
	oauth  *oauth.Verifier
	rules  []config.OAuthRule
}

// required reports whether every request must authenticate.
func (a *authenticator) required() bool { return len(a.tokens) > 0 || a.oauth != nil }

func newAuthenticator(s *Server, o HTTPOptions) *authenticator {
	a := &authenticator{s: s, oauth: o.OAuth}
	if o.Token != "" {
		a.tokens = append(a.tokens, staticToken{digest: sha256.Sum256([]byte(o.Token)), name: "default"})
	}
	for _, p := range o.Principals {
		a.tokens = append(a.tokens, staticToken{digest: sha256.Sum256([]byte(p.Token)), name: p.Name})
	}
	if oc := s.g.Cfg.Serve.OAuth; oc != nil {
		a.rules = oc.Principals
	}
	return a
}

// bearerToken parses an Authorization header: `Bearer <token>`, the scheme in any case, the
// fields separated by any run of white space.
func bearerToken(h string) (string, bool) {
	f := strings.Fields(h)
	if len(f) != 2 || !strings.EqualFold(f[0], "bearer") {
		return "", false
	}
	return f[1], true
}

// authError is a refused credential: the status (401 or 403) and the WWW-Authenticate error.
type authError struct {
	status int
	code   string // RFC 6750: invalid_request, invalid_token, insufficient_scope ("" without a token)
	msg    string
}

func (e *authError) Error() string { return e.msg }

// authenticate returns the request's identity, or why it is refused.
func (a *authenticator) authenticate(ctx context.Context, header string) (identity, *authError) {
	def := a.s.profileFor("")
	if !a.required() {
		return identity{prof: def}, nil
	}
	if header == "" {
		return identity{}, &authError{status: http.StatusUnauthorized, msg: "authentication required: send `Authorization: Bearer <token>`" + a.hint()}
	}
	tok, ok := bearerToken(header)
	if !ok {
		return identity{}, &authError{status: http.StatusUnauthorized, code: "invalid_request", msg: "the Authorization header is not `Bearer <token>`"}
	}
	sum := sha256.Sum256([]byte(tok))
	match := -1
	for i := range a.tokens {
		if subtle.ConstantTimeCompare(sum[:], a.tokens[i].digest[:]) == 1 {
			match = i
		}
	}
	if match >= 0 {
		name := a.tokens[match].name
		return identity{principal: name, prof: a.s.profileFor(name)}, nil
	}
	if a.oauth == nil {
		return identity{}, &authError{status: http.StatusUnauthorized, code: "invalid_token", msg: "wrong bearer token" + a.hint()}
	}
	t, err := a.oauth.Verify(ctx, tok)
	if err != nil {
		var ie *oauth.Error
		if errors.As(err, &ie) && ie.Scope {
			return identity{}, &authError{status: http.StatusForbidden, code: "insufficient_scope", msg: err.Error()}
		}
		return identity{}, &authError{status: http.StatusUnauthorized, code: "invalid_token", msg: err.Error()}
	}
	prof, ok := a.profileOf(t)
	if !ok {
		return identity{}, &authError{status: http.StatusForbidden, code: "insufficient_scope",
			msg: "the access token matches no serve.oauth.principals rule (it lacks the scopes or claims of every principal)"}
	}
	return identity{principal: "oauth:" + t.Subject, prof: prof}, nil
}

// profileOf maps an OAuth token onto the profile of the first rule it matches.
func (a *authenticator) profileOf(t *oauth.Token) (*profile, bool) {
	if len(a.rules) == 0 {
		return a.s.profileFor(""), true
	}
	for _, r := range a.rules {
		switch {
		case r.Scope != "" && !slices.Contains(t.Scopes, r.Scope):
		case r.Claim != "" && !t.HasClaim(r.Claim, r.Value):
		default:
			return a.s.profileFor(r.Principal), true
		}
	}
	return nil, false
}

func (a *authenticator) hint() string {
	if a.oauth != nil {
		return " (an OAuth access token from " + a.oauth.Issuer() + ", or a principal's token)"
	}
	return " (serve.principals tokens, serve.http.token or CODEMODE_TOKEN)"
}

// challenge is the WWW-Authenticate value of a refusal: with OAuth, a pointer to the
// protected-resource metadata (RFC 9728 §5.1) and the scopes to ask for.
func (a *authenticator) challenge(e *authError) string {
	var params []string
	if a.oauth != nil {
		params = append(params, fmt.Sprintf("resource_metadata=%q", a.oauth.MetadataURL()))
		if sc := a.oauth.Scopes(); len(sc) > 0 {
			params = append(params, fmt.Sprintf("scope=%q", strings.Join(sc, " ")))
		}
	} else {
		params = append(params, `realm="codemode"`)
	}
	if e.code != "" {
		params = append(params, fmt.Sprintf("error=%q", e.code))
	}
	return "Bearer " + strings.Join(params, ", ")
}

type identityKey struct{}

func withIdentity(ctx context.Context, id identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// identityFrom returns the identity the guard put in ctx (ok false: none, e.g. stdio).
func identityFrom(ctx context.Context) (identity, bool) {
	id, ok := ctx.Value(identityKey{}).(identity)
	return id, ok
}
