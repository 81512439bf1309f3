package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemode-go/codemode/config"
	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jwt"
)

// issuer is a local authorization server: a JWKS endpoint and the keys that sign its tokens
// (issue 19 item 4: tests run their own issuer, no network).
type issuer struct {
	t       testing.TB
	srv     *httptest.Server
	mu      sync.Mutex
	keys    map[string]jwk.Key // private, by kid
	pub     []jwk.Key
	fetches atomic.Int32
}

func newIssuer(t testing.TB) *issuer {
	is := &issuer{t: t, keys: map[string]jwk.Key{}}
	is.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		is.fetches.Add(1)
		is.mu.Lock()
		set := jwk.NewSet()
		for _, k := range is.pub {
			_ = set.AddKey(k)
		}
		is.mu.Unlock()
		_ = json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(is.srv.Close)
	return is
}

// addKey makes a signing key (RSA or EC) published under kid; replace drops the others (a
// rotation).
func (is *issuer) addKey(kid string, ec, replace bool) {
	var raw any
	var err error
	if ec {
		raw, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	} else {
		raw, err = rsa.GenerateKey(rand.Reader, 2048)
	}
	if err != nil {
		is.t.Fatal(err)
	}
	priv, err := jwk.Import(raw)
	if err != nil {
		is.t.Fatal(err)
	}
	_ = priv.Set(jwk.KeyIDKey, kid)
	pub, err := priv.PublicKey()
	if err != nil {
		is.t.Fatal(err)
	}
	is.mu.Lock()
	defer is.mu.Unlock()
	if replace {
		is.pub = nil // the old private keys still sign (as a stolen or stale token would be)
	}
	is.keys[kid] = priv
	is.pub = append(is.pub, pub)
}

const resource = "https://mcp.example/mcp"

func (is *issuer) cfg() config.OAuth {
	return config.OAuth{Issuer: "https://auth.example", Resource: resource, JWKSURL: is.srv.URL, ClockSkewSeconds: 30,
		PrincipalClaim: "sub", Scopes: []string{"mcp"}}
}

// token signs claims with the key kid (defaults filled in: iss, aud, sub, exp, scope).
func (is *issuer) token(kid string, edit func(jwt.Token)) string {
	tok := jwt.New()
	_ = tok.Set(jwt.IssuerKey, "https://auth.example")
	_ = tok.Set(jwt.AudienceKey, []string{resource})
	_ = tok.Set(jwt.SubjectKey, "alice")
	_ = tok.Set(jwt.ExpirationKey, time.Now().Add(time.Hour))
	_ = tok.Set(jwt.IssuedAtKey, time.Now())
	_ = tok.Set("scope", "mcp ops")
	if edit != nil {
		edit(tok)
	}
	is.mu.Lock()
	key := is.keys[kid]
	is.mu.Unlock()
	alg := jwa.RS256()
	if key.KeyType() == jwa.EC() {
		alg = jwa.ES256()
	}
	b, err := jwt.Sign(tok, jwt.WithKey(alg, key))
	if err != nil {
		is.t.Fatal(err)
	}
	return string(b)
}

func newVerifier(t testing.TB, is *issuer) *Verifier {
	v, err := New(context.Background(), is.cfg(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestVerify: valid, expired, wrong audience, wrong issuer, missing scope, not yet valid, skew,
// and tokens no honest issuer makes (issue 19's JWT test list).
func TestVerify(t *testing.T) {
	is := newIssuer(t)
	is.addKey("k1", false, false)
	is.addKey("e1", true, false)
	v := newVerifier(t, is)
	cases := []struct {
		name  string
		token string
		want  string // "" means valid; otherwise a substring of the error
		scope bool
	}{
		{"valid RS256", is.token("k1", nil), "", false},
		{"valid ES256", is.token("e1", nil), "", false},
		{"expired", is.token("k1", func(t jwt.Token) { _ = t.Set(jwt.ExpirationKey, time.Now().Add(-time.Hour)) }), "expired", false},
		{"expired within the skew", is.token("k1", func(t jwt.Token) { _ = t.Set(jwt.ExpirationKey, time.Now().Add(-10*time.Second)) }), "", false},
		{"not yet valid", is.token("k1", func(t jwt.Token) { _ = t.Set(jwt.NotBeforeKey, time.Now().Add(time.Hour)) }), "not valid yet", false},
		{"wrong audience", is.token("k1", func(t jwt.Token) { _ = t.Set(jwt.AudienceKey, []string{"https://other.example/mcp"}) }), "not for this server", false},
		{"wrong issuer", is.token("k1", func(t jwt.Token) { _ = t.Set(jwt.IssuerKey, "https://evil.example") }), "another issuer", false},
		{"missing scope", is.token("k1", func(t jwt.Token) { _ = t.Set("scope", "ops") }), `lacks the scope "mcp"`, true},
		{"no expiry", is.token("k1", func(t jwt.Token) { _ = t.Remove(jwt.ExpirationKey) }), "exp", false},
		{"unknown key", strings.Replace(is.token("k1", nil), "", "", 1)[:0] + forge(t, "zz", "RS256"), "no key", false},
		{"alg none", forge(t, "k1", "none"), "not accepted", false},
		{"alg HS256", forge(t, "k1", "HS256"), "not accepted", false},
		{"garbage", "a.b.c", "invalid access token", false},
		{"not a JWT", "opaque-token-value", "neither", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tok, err := v.Verify(context.Background(), c.token)
			if c.want == "" {
				if err != nil || tok.Subject != "alice" || !tok.HasClaim("sub", "alice") {
					t.Fatalf("%v %+v", err, tok)
				}
				return
			}
			var oe *Error
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &oe) || oe.Scope != c.scope {
				t.Fatalf("got %v, want an error with %q (scope %v)", err, c.want, c.scope)
			}
		})
	}
}

// forge makes a token with the header's alg and kid and a signature no key made.
func forge(t testing.TB, kid, alg string) string {
	h, _ := json.Marshal(map[string]string{"alg": alg, "kid": kid, "typ": "JWT"})
	p, _ := json.Marshal(map[string]any{"iss": "https://auth.example", "aud": resource, "sub": "mallory", "scope": "mcp", "exp": time.Now().Add(time.Hour).Unix()})
	enc := base64.RawURLEncoding.EncodeToString
	return enc(h) + "." + enc(p) + "." + enc([]byte("signature"))
}

// TestKeyRotation: the issuer replaces its key; a token signed with the new key fetches the
// JWKS again (once), tokens of the old key are then refused, and a flood of unknown key ids
// does not make a fetch each.
func TestKeyRotation(t *testing.T) {
	is := newIssuer(t)
	is.addKey("old", false, false)
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	v, err := New(context.Background(), is.cfg(), Options{Now: func() time.Time { return time.Unix(0, now.Load()) }})
	if err != nil {
		t.Fatal(err)
	}
	oldTok := is.token("old", nil)
	if _, err := v.Verify(context.Background(), oldTok); err != nil {
		t.Fatal(err)
	}
	is.addKey("new", true, true)
	now.Add(int64(2 * MinRefetch))
	if _, err := v.Verify(context.Background(), is.token("new", nil)); err != nil {
		t.Fatalf("token of the rotated key: %v", err)
	}
	if got := is.fetches.Load(); got != 2 {
		t.Fatalf("%d fetches, want 2 (start, rotation)", got)
	}
	if _, err := v.Verify(context.Background(), is.token("old", func(t jwt.Token) { _ = t.Set("jti", "x") })); err == nil {
		t.Fatal("a token of the retired key was accepted")
	}
	for i := range 50 {
		_, _ = v.Verify(context.Background(), forge(t, "made-up-"+string(rune('a'+i%26)), "RS256"))
	}
	if got := is.fetches.Load(); got > 3 {
		t.Fatalf("%d fetches after a flood of unknown key ids", got)
	}
}

func TestMetadata(t *testing.T) {
	is := newIssuer(t)
	is.addKey("k", false, false)
	v := newVerifier(t, is)
	if got := v.MetadataURL(); got != "https://mcp.example/.well-known/oauth-protected-resource/mcp" {
		t.Fatal(got)
	}
	rec := httptest.NewRecorder()
	v.ServeMetadata(rec, httptest.NewRequest("GET", "/.well-known/oauth-protected-resource/mcp", nil))
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil || m["resource"] != resource ||
		m["authorization_servers"].([]any)[0] != "https://auth.example" || rec.Header().Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("%v %s", err, rec.Body)
	}
}

// BenchmarkVerify: the cost of validating a request's token with the issuer's key cached
// (issue 19: target ≤ 20 µs). "first" validates a new token each time (signature included);
// "repeat" is the same token again, as clients send it on every request.
func BenchmarkVerify(b *testing.B) {
	for _, ec := range []bool{false, true} {
		name := "RS256"
		if ec {
			name = "ES256"
		}
		is := newIssuer(b)
		is.addKey("k", ec, false)
		v := newVerifier(b, is)
		toks := make([]string, 256)
		for i := range toks {
			toks[i] = is.token("k", func(t jwt.Token) { _ = t.Set("jti", i) })
		}
		b.Run(name+"/first", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				v.cmu.Lock()
				clear(v.cache)
				v.cmu.Unlock()
				if _, err := v.Verify(context.Background(), toks[i%len(toks)]); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/repeat", func(b *testing.B) {
			for b.Loop() {
				if _, err := v.Verify(context.Background(), toks[0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
