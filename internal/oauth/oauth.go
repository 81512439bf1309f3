// Package oauth makes `codemode serve` an OAuth 2.1 resource server, as the MCP authorization
// specification describes: it validates JWT access tokens issued by one authorization server
// (signature with a key of the issuer's JWKS, iss, aud = this server, exp/nbf/iat with a clock
// skew, required scopes) and describes itself with RFC 9728 protected-resource metadata, which
// clients find through the WWW-Authenticate header of a 401.
//
// JWT parsing and signature checks are github.com/lestrrat-go/jwx/v3's. The JWKS is fetched
// once at start and kept; a token signed with a key id the cache lacks (the issuer rotated its
// keys) fetches it again, at most once per MinRefetch, and the set is refreshed every
// RefreshInterval in any case. A validated token is remembered (by its SHA-256) until it
// expires, so a client that sends the same token on every request pays the signature check once.
package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/codemode-go/codemode/config"
	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"
)

// Defaults of the key cache.
const (
	// RefreshInterval is how often the JWKS is fetched again while tokens arrive.
	RefreshInterval = 15 * time.Minute
	// MinRefetch bounds fetches caused by unknown key ids: a flood of tokens naming made-up keys
	// costs at most one fetch per interval.
	MinRefetch = time.Minute
	// maxJWKSBytes bounds the JWKS document.
	maxJWKSBytes = 1 << 20
	// maxTokenBytes bounds an access token.
	maxTokenBytes = 16 << 10
	// cacheSize bounds the validated tokens remembered.
	cacheSize = 4096
)

// algorithms are the signature algorithms accepted: asymmetric only (an HMAC "key" in a public
// JWKS would let anyone sign), never "none".
var algorithms = []jwa.SignatureAlgorithm{jwa.RS256(), jwa.RS384(), jwa.RS512(), jwa.PS256(), jwa.PS384(), jwa.PS512(),
	jwa.ES256(), jwa.ES384(), jwa.ES512(), jwa.EdDSA()}

// Error is a token the verifier refused. Scope says it was valid but lacks a required scope
// (403 insufficient_scope rather than 401 invalid_token).
type Error struct {
	Msg   string
	Scope bool
}

func (e *Error) Error() string { return e.Msg }

// Token is a validated access token.
type Token struct {
	// Subject is the principal claim's value (serve.oauth.principalClaim, default "sub").
	Subject string
	Scopes  []string
	Expires time.Time
	claims  map[string]any
}

// HasClaim reports whether the token's claim name equals value or, for an array claim (such
// as "groups"), contains it.
func (t *Token) HasClaim(name, value string) bool {
	switch v := t.claims[name].(type) {
	case string:
		return v == value
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok && s == value {
				return true
			}
		}
	case bool:
		return fmt.Sprint(v) == value
	case float64:
		return fmt.Sprint(v) == value
	}
	return false
}

// Options configure New.
type Options struct {
	// HTTPClient fetches the JWKS (default: a client with a 10 s timeout).
	HTTPClient *http.Client
	Logger     *slog.Logger
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// Verifier validates access tokens for one resource. It is safe for concurrent use.
type Verifier struct {
	cfg  config.OAuth
	hc   *http.Client
	log  *slog.Logger
	now  func() time.Time
	meta []byte // the RFC 9728 document

	mu        sync.Mutex
	set       jwk.Set
	fetched   time.Time // last successful fetch
	attempted time.Time // last fetch attempt
	fetching  chan struct{}

	cmu   sync.Mutex
	cache map[[32]byte]*Token
}

// New creates a verifier and fetches the issuer's keys. A JWKS that cannot be fetched now is
// not fatal: the error is logged and tokens are refused until a fetch succeeds.
func New(ctx context.Context, cfg config.OAuth, o Options) (*Verifier, error) {
	if cfg.Issuer == "" || cfg.Resource == "" || cfg.JWKSURL == "" {
		return nil, errors.New("oauth: issuer, resource and jwksUrl are required")
	}
	v := &Verifier{cfg: cfg, hc: o.HTTPClient, log: o.Logger, now: o.Now, cache: map[[32]byte]*Token{}}
	if v.hc == nil {
		v.hc = &http.Client{Timeout: 10 * time.Second}
	}
	if v.log == nil {
		v.log = slog.New(slog.DiscardHandler)
	}
	if v.now == nil {
		v.now = time.Now
	}
	meta, err := json.Marshal(map[string]any{
		"resource":                 cfg.Resource,
		"authorization_servers":    []string{cfg.Issuer},
		"scopes_supported":         nonNil(cfg.Scopes),
		"bearer_methods_supported": []string{"header"},
		"resource_name":            "codemode gateway",
	})
	if err != nil {
		return nil, err
	}
	v.meta = meta
	if err := v.refresh(ctx); err != nil {
		v.log.Warn("oauth: cannot fetch the issuer's keys yet; tokens are refused until it succeeds", "jwks", cfg.JWKSURL, "err", err)
	}
	return v, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Issuer is the authorization server's issuer identifier.
func (v *Verifier) Issuer() string { return v.cfg.Issuer }

// Scopes are the scopes every token must carry.
func (v *Verifier) Scopes() []string { return slices.Clone(v.cfg.Scopes) }

// MetadataPaths are the paths of the protected-resource metadata on this server: the
// well-known path with the resource's path appended (RFC 9728 §3.1), and the bare one.
func (v *Verifier) MetadataPaths() []string {
	const wk = "/.well-known/oauth-protected-resource"
	paths := []string{wk}
	if u, err := url.Parse(v.cfg.Resource); err == nil && u.Path != "" && u.Path != "/" {
		paths = append([]string{wk + strings.TrimSuffix(u.Path, "/")}, paths...)
	}
	return paths
}

// MetadataURL is the absolute URL of the metadata, for WWW-Authenticate.
func (v *Verifier) MetadataURL() string {
	u, err := url.Parse(v.cfg.Resource)
	if err != nil {
		return v.MetadataPaths()[0]
	}
	return u.Scheme + "://" + u.Host + v.MetadataPaths()[0]
}

// ServeMetadata serves the RFC 9728 document. It is public: any origin may read it.
func (v *Verifier) ServeMetadata(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Cache-Control", "max-age=300")
	w.Header().Set("Content-Type", "application/json")
	if r.Method == http.MethodOptions {
		w.Header().Set("Access-Control-Allow-Methods", "GET, OPTIONS")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	_, _ = w.Write(v.meta)
}

// Verify validates an access token.
func (v *Verifier) Verify(ctx context.Context, token string) (*Token, error) {
	if len(token) > maxTokenBytes {
		return nil, &Error{Msg: "the access token is too long"}
	}
	if strings.Count(token, ".") != 2 {
		return nil, &Error{Msg: "the bearer token is neither a principal's token nor a JWT access token"}
	}
	sum := sha256.Sum256([]byte(token))
	now := v.now()
	v.cmu.Lock()
	t, ok := v.cache[sum]
	v.cmu.Unlock()
	if ok {
		if now.Before(t.Expires.Add(v.cfg.ClockSkew())) {
			return t, nil
		}
		v.cmu.Lock()
		delete(v.cache, sum)
		v.cmu.Unlock()
		return nil, &Error{Msg: "the access token expired"}
	}
	t, err := v.validate(ctx, token, now)
	if err != nil {
		return nil, err
	}
	v.cmu.Lock()
	if len(v.cache) >= cacheSize {
		for k, e := range v.cache { // drop the expired, or an arbitrary one if none is
			if !now.Before(e.Expires) || len(v.cache) >= cacheSize {
				delete(v.cache, k)
			}
			if len(v.cache) < cacheSize*3/4 {
				break
			}
		}
	}
	v.cache[sum] = t
	v.cmu.Unlock()
	return t, nil
}

type clockFunc func() time.Time

func (f clockFunc) Now() time.Time { return f() }

func (v *Verifier) validate(ctx context.Context, token string, now time.Time) (*Token, error) {
	parsed, err := jwt.ParseString(token,
		jwt.WithKeyProvider(&keys{v: v, ctx: ctx}),
		jwt.WithIssuer(v.cfg.Issuer),
		jwt.WithAudience(v.cfg.Resource),
		jwt.WithAcceptableSkew(v.cfg.ClockSkew()),
		jwt.WithClock(clockFunc(func() time.Time { return now })),
		jwt.WithRequiredClaim("exp"),
		jwt.WithRequiredClaim(v.cfg.PrincipalClaim),
	)
	if err != nil {
		return nil, &Error{Msg: "invalid access token: " + describe(err)}
	}
	t := &Token{claims: map[string]any{}}
	t.Expires, _ = parsed.Expiration()
	for _, k := range parsed.Keys() {
		var val any
		if parsed.Get(k, &val) == nil {
			t.claims[k] = val
		}
	}
	switch sub := t.claims[v.cfg.PrincipalClaim].(type) {
	case string:
		t.Subject = sub
	default:
		return nil, &Error{Msg: fmt.Sprintf("invalid access token: the %q claim is not a string", v.cfg.PrincipalClaim)}
	}
	if t.Subject == "" || len(t.Subject) > 256 {
		return nil, &Error{Msg: fmt.Sprintf("invalid access token: the %q claim is empty or longer than 256 bytes", v.cfg.PrincipalClaim)}
	}
	if s, ok := t.claims["scope"].(string); ok {
		t.Scopes = strings.Fields(s)
	} else if l, ok := t.claims["scp"].([]any); ok {
		for _, e := range l {
			if s, ok := e.(string); ok {
				t.Scopes = append(t.Scopes, s)
			}
		}
	}
	for _, want := range v.cfg.Scopes {
		if !slices.Contains(t.Scopes, want) {
			return nil, &Error{Msg: fmt.Sprintf("the access token lacks the scope %q", want), Scope: true}
		}
	}
	return t, nil
}

// describe shortens jwx's errors to what a client can act on.
func describe(err error) string {
	switch {
	case errors.Is(err, jwt.TokenExpiredError()):
		return "it expired"
	case errors.Is(err, jwt.TokenNotYetValidError()):
		return "it is not valid yet"
	case errors.Is(err, jwt.InvalidIssuerError()):
		return "it was issued by another issuer"
	case errors.Is(err, jwt.InvalidAudienceError()):
		return "it is not for this server (aud)"
	case errors.Is(err, jwt.InvalidIssuedAtError()):
		return "it was issued in the future (iat)"
	}
	var ke *keyError
	if errors.As(err, &ke) {
		return ke.msg
	}
	msg := err.Error()
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return msg
}

// keyError is why no key can check a token's signature.
type keyError struct{ msg string }

func (e *keyError) Error() string { return e.msg }

func keyErrorf(format string, args ...any) error { return &keyError{fmt.Sprintf(format, args...)} }

// keys is the jws.KeyProvider: the key the token's kid names, from the cached set, fetching
// the set again when the kid is unknown.
type keys struct {
	v   *Verifier
	ctx context.Context
}

func (k *keys) FetchKeys(_ context.Context, sink jws.KeySink, sig *jws.Signature, _ *jws.Message) error {
	alg, ok := sig.ProtectedHeaders().Algorithm()
	if !ok || !slices.Contains(algorithms, alg) {
		return keyErrorf("signature algorithm %q is not accepted", alg)
	}
	kid, _ := sig.ProtectedHeaders().KeyID()
	key, err := k.v.key(k.ctx, kid)
	if err != nil {
		return err
	}
	if use, ok := key.KeyUsage(); ok && use != "" && use != jwk.ForSignature.String() {
		return keyErrorf("key %q is not a signing key", kid)
	}
	if ka, ok := key.Algorithm(); ok && ka.String() != alg.String() {
		return keyErrorf("key %q is for %s, not %s", kid, ka, alg)
	}
	sink.Key(alg, key)
	return nil
}

// key returns the key with this id (the only key when kid is "" and the set has one).
func (v *Verifier) key(ctx context.Context, kid string) (jwk.Key, error) {
	if key, ok := v.lookup(kid); ok {
		if v.stale() {
			go func() { _ = v.refresh(context.WithoutCancel(ctx)) }()
		}
		return key, nil
	}
	if err := v.refetch(ctx); err != nil {
		return nil, keyErrorf("no key %q: cannot fetch the issuer's keys: %v", kid, err)
	}
	if key, ok := v.lookup(kid); ok {
		return key, nil
	}
	return nil, keyErrorf("the issuer has no key %q", kid)
}

func (v *Verifier) lookup(kid string) (jwk.Key, bool) {
	v.mu.Lock()
	set := v.set
	v.mu.Unlock()
	if set == nil {
		return nil, false
	}
	if kid == "" {
		if set.Len() == 1 {
			return set.Key(0)
		}
		return nil, false
	}
	return set.LookupKeyID(kid)
}

func (v *Verifier) stale() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.fetching == nil && v.now().Sub(v.attempted) > RefreshInterval
}

// refetch fetches the set for an unknown kid, unless a fetch was attempted within MinRefetch.
func (v *Verifier) refetch(ctx context.Context) error {
	v.mu.Lock()
	recent := v.now().Sub(v.attempted) < MinRefetch
	v.mu.Unlock()
	if recent {
		return errors.New("fetched less than a minute ago")
	}
	return v.refresh(ctx)
}

// refresh fetches the JWKS; concurrent callers share one fetch.
func (v *Verifier) refresh(ctx context.Context) error {
	v.mu.Lock()
	if ch := v.fetching; ch != nil {
		v.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		v.mu.Lock()
		defer v.mu.Unlock()
		if v.set == nil {
			return errors.New("the fetch failed")
		}
		return nil
	}
	ch := make(chan struct{})
	v.fetching = ch
	v.attempted = v.now()
	v.mu.Unlock()
	set, err := v.fetch(ctx)
	v.mu.Lock()
	if err == nil {
		v.set, v.fetched = set, v.now()
	}
	v.fetching = nil
	v.mu.Unlock()
	close(ch)
	if err != nil {
		v.log.Warn("oauth: JWKS fetch failed", "jwks", v.cfg.JWKSURL, "err", err)
	}
	return err
}

func (v *Verifier) fetch(ctx context.Context) (jwk.Set, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.cfg.JWKSURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	res, err := v.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", res.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, err
	}
	if len(body) > maxJWKSBytes {
		return nil, fmt.Errorf("the JWKS is larger than %d bytes", maxJWKSBytes)
	}
	set, err := jwk.Parse(body)
	if err != nil {
		return nil, fmt.Errorf("not a JWKS: %v", err)
	}
	return set, nil
}
