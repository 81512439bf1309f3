package config

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/codemode-go/codemode/api"
)

// Principal is one client of `codemode serve --http` known by name (serve.principals). Its
// name is who the audit log, the logs and the metrics say acted; its runs are its own (another
// principal's wait on them fails as a wrong-session wait does); its tool policy narrows the
// gateway's tools section (a principal never sees a tool the gateway denies).
//
//	principals: [{name: "ci", token: {env: "CODEMODE_TOKEN_CI"},
//	              tools: {allow: ["native:core:read"], approvals: ["mcp:*:delete*"]}, maxRunning: 4}]
type Principal struct {
	// Name is 1–64 of A–Z a–z 0–9 _ . - ("default" and "anonymous" are reserved).
	Name string
	// Token is the principal's bearer token ({env} or {file}: never in the file itself). A
	// principal without one is reached only through serve.oauth.principals.
	Token Secret
	// Tools is the principal's own tool policy, applied after the gateway's.
	Tools PrincipalTools
	// MaxRunning bounds the principal's execs and waits running at once (beside the process's
	// runtime.admission): 0–4096, default 0 (no bound of its own). A call past it fails at once
	// with the code "overloaded".
	MaxRunning int
}

// PrincipalTools is a principal's tool policy: the same keys and patterns as the tools section.
type PrincipalTools struct {
	// Allow, when non-nil, is the only set of tools the principal may use (among those the
	// gateway allows); an empty list gives it no tools.
	Allow []string
	// Deny removes tools after Allow.
	Deny []string
	// DirectOnly names tools the principal's model sees directly beside exec and wait.
	DirectOnly []string
	// Approvals are checked before the gateway's tools.approvals rules.
	Approvals api.Approvals
}

// OAuth is serve.oauth: the listener is an OAuth 2.1 resource server (the MCP authorization
// spec) for one authorization server. Access tokens are JWTs signed with a key of the issuer's
// JWKS, for this server (aud), unexpired; the listener publishes its RFC 9728 protected-resource
// metadata at /.well-known/oauth-protected-resource.
type OAuth struct {
	// Issuer is the authorization server's issuer identifier (the tokens' iss), an https URL
	// (http only for a loopback issuer).
	Issuer string
	// Resource is this server's MCP endpoint as clients reach it ("https://mcp.example.com/mcp"):
	// tokens must name it in aud, and the metadata names it.
	Resource string
	// JWKSURL is where the issuer publishes its signing keys; fetched at start, cached, and
	// fetched again when a token names a key the cache lacks (at most once a minute) and every
	// refresh interval.
	JWKSURL string
	// ClockSkewSeconds tolerates clocks that disagree when checking exp, nbf and iat: 0–600,
	// default 60.
	ClockSkewSeconds int
	// PrincipalClaim is the claim that identifies the user (default "sub"); the run scope and
	// the audit log name "oauth:<value>".
	PrincipalClaim string
	// Scopes every token must carry (advertised as scopes_supported and in WWW-Authenticate).
	Scopes []string
	// Principals map a token onto a principal's policy and limits: the first rule whose scope
	// (or claim = value) the token has wins. No rule matching means 403 insufficient_scope;
	// without rules every token gets the gateway's own policy.
	Principals []OAuthRule
}

// OAuthRule is one serve.oauth.principals rule: {scope: "codemode:admin", principal: "admin"},
// {claim: "groups", value: "ops", principal: "ops"} or {principal: "user"} (matches every token).
type OAuthRule struct {
	// Scope matches a token that carries this scope.
	Scope string
	// Claim and Value match a token whose claim Claim is, or contains, Value.
	Claim string
	// Value is the claim's value to match.
	Value string
	// Principal is the serve.principals name (its policy and limits) a matching token gets.
	Principal string
}

// ClockSkew is ClockSkewSeconds as a duration.
func (o OAuth) ClockSkew() time.Duration { return time.Duration(o.ClockSkewSeconds) * time.Second }

const defaultOAuthClockSkewSeconds = 60

var principalNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// Reserved principal names: the legacy serve.http.token's principal and an unauthenticated
// loopback listener's.
var reservedPrincipals = []string{"default", "anonymous"}

func (d *decoder) principals(p path, v any, out *[]Principal) {
	list, ok := v.([]any)
	if !ok {
		d.errorf(p, "expected an array of principals, got %s", describe(v))
		return
	}
	seen := map[string]bool{}
	tokens := map[Secret]string{}
	for i, e := range list {
		ep := p.index(i)
		m, ok := d.object(ep, e, "name", "token", "tools", "maxRunning")
		if !ok {
			continue
		}
		var pr Principal
		d.setString(ep, m, "name", &pr.Name)
		switch {
		case pr.Name == "":
			d.errorf(ep, "a principal needs a `name` (1–64 of A–Z a–z 0–9 _ . -)")
		case !principalNameRE.MatchString(pr.Name):
			d.errorf(ep.key("name"), "%q is not a principal name (1–64 of A–Z a–z 0–9 _ . -)", pr.Name)
		case slices.Contains(reservedPrincipals, pr.Name):
			d.errorf(ep.key("name"), "%q is reserved (%s)", pr.Name, strings.Join(reservedPrincipals, " and ")+" name the legacy serve.http.token and unauthenticated loopback clients")
		case seen[pr.Name]:
			d.errorf(ep.key("name"), "duplicate principal %q", pr.Name)
		}
		seen[pr.Name] = true
		if v, ok := m["token"]; ok {
			if d.secret(ep.key("token"), v, &pr.Token) {
				if other, dup := tokens[pr.Token]; dup {
					d.errorf(ep.key("token"), "principal %q reads its token from the same place (%s): each principal needs its own", other, pr.Token)
				}
				tokens[pr.Token] = pr.Name
			}
		}
		if v, ok := m["tools"]; ok {
			tp := ep.key("tools")
			if tm, ok := d.object(tp, v, "allow", "deny", "directOnly", "approvals"); ok {
				d.setStrings(tp, tm, "allow", &pr.Tools.Allow)
				d.setStrings(tp, tm, "deny", &pr.Tools.Deny)
				d.setStrings(tp, tm, "directOnly", &pr.Tools.DirectOnly)
				for j, name := range pr.Tools.DirectOnly {
					if name == "exec" || name == "wait" {
						d.errorf(tp.key("directOnly").index(j), "%q is a code mode control tool and cannot be direct-only", name)
					}
				}
				if v, ok := tm["approvals"]; ok {
					d.approvals(tp.key("approvals"), v, &pr.Tools.Approvals)
				}
			}
		}
		setInt(d, ep, m, "maxRunning", 0, 4096, &pr.MaxRunning)
		*out = append(*out, pr)
	}
}

func (d *decoder) oauth(p path, v any, s *Serve) {
	m, ok := d.object(p, v, "issuer", "resource", "jwksUrl", "clockSkewSeconds", "principalClaim", "scopes", "principals")
	if !ok {
		return
	}
	o := &OAuth{ClockSkewSeconds: defaultOAuthClockSkewSeconds, PrincipalClaim: "sub"}
	d.setString(p, m, "issuer", &o.Issuer)
	d.setString(p, m, "resource", &o.Resource)
	d.setString(p, m, "jwksUrl", &o.JWKSURL)
	for _, k := range []struct {
		key string
		val string
	}{{"issuer", o.Issuer}, {"resource", o.Resource}, {"jwksUrl", o.JWKSURL}} {
		if _, set := m[k.key]; !set {
			d.errorf(p, "%s is required", k.key)
			continue
		}
		if msg := checkOAuthURL(k.val); msg != "" {
			d.errorf(p.key(k.key), "%s", msg)
		}
	}
	setInt(d, p, m, "clockSkewSeconds", 0, 600, &o.ClockSkewSeconds)
	d.setString(p, m, "principalClaim", &o.PrincipalClaim)
	if o.PrincipalClaim == "" {
		d.errorf(p.key("principalClaim"), "must not be empty")
	}
	d.setStrings(p, m, "scopes", &o.Scopes)
	if v, ok := m["principals"]; ok {
		rp := p.key("principals")
		list, ok := v.([]any)
		if !ok {
			d.errorf(rp, "expected an array of rules, got %s", describe(v))
		}
		for i, e := range list {
			ep := rp.index(i)
			rm, ok := d.object(ep, e, "scope", "claim", "value", "principal")
			if !ok {
				continue
			}
			var r OAuthRule
			d.setString(ep, rm, "scope", &r.Scope)
			d.setString(ep, rm, "claim", &r.Claim)
			d.setString(ep, rm, "value", &r.Value)
			d.setString(ep, rm, "principal", &r.Principal)
			switch {
			case r.Principal == "":
				d.errorf(ep, "a rule needs `principal` (the name of a serve.principals entry)")
			case r.Scope != "" && r.Claim != "":
				d.errorf(ep, "give either scope or claim (with value), not both")
			case (r.Claim == "") != (r.Value == ""):
				d.errorf(ep, "claim and value go together: {claim: \"groups\", value: \"ops\", principal: …}")
			}
			o.Principals = append(o.Principals, r)
		}
	}
	s.OAuth = o
}

// checkOAuthURL returns why raw cannot name an issuer, resource or JWKS, or "".
func checkOAuthURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "expected an absolute http(s) URL such as \"https://auth.example.com\""
	}
	if u.Scheme == "http" && !isLoopbackHost(u.Hostname()) {
		return "must use https (plain http only for a loopback address)"
	}
	if u.User != nil || u.Fragment != "" {
		return "must not carry user information or a fragment"
	}
	return ""
}

func isLoopbackHost(h string) bool {
	return h == "localhost" || h == "::1" || strings.HasPrefix(h, "127.")
}

// checkPrincipalRefs checks what ties principals and OAuth rules together.
func (d *decoder) checkPrincipalRefs(p path, s *Serve) {
	names := map[string]bool{}
	for _, pr := range s.Principals {
		names[pr.Name] = true
	}
	mapped := map[string]bool{}
	if s.OAuth != nil {
		for i, r := range s.OAuth.Principals {
			if r.Principal != "" && !names[r.Principal] {
				d.errorf(p.key("oauth").key("principals").index(i).key("principal"), "no serve.principals entry is named %q", r.Principal)
			}
			mapped[r.Principal] = true
		}
	}
	for i, pr := range s.Principals {
		if pr.Token.IsZero() && !mapped[pr.Name] && pr.Name != "" {
			d.errorf(p.key("principals").index(i), "principal %q has no token and no serve.oauth.principals rule names it: nobody can act as it", pr.Name)
		}
	}
}
