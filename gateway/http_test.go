package gateway

import (
	"strings"
	"testing"

	"github.com/codemode-go/codemode/config"
)

// TestHTTPOptionsPrincipals: principals' tokens are resolved from their secrets and let the
// listener bind every interface; a missing or shared token is refused with its principal named
// (issue 19 item 3).
func TestHTTPOptionsPrincipals(t *testing.T) {
	t.Setenv("CODEMODE_TOKEN", "")
	t.Setenv("LC_ALICE", "alice-token-0123456789")
	t.Setenv("LC_BOB", "alice-token-0123456789")
	t.Setenv("LC_SHORT", "short")
	serve := func(p ...config.Principal) config.Serve {
		s := config.Default().Serve
		s.Principals = p
		return s
	}
	alice := config.Principal{Name: "alice", Token: config.Secret{Env: "LC_ALICE"}}
	opts, _, err := httpOptions(":0", serve(alice, config.Principal{Name: "oauth-only"}))
	if err != nil || len(opts.Principals) != 1 || opts.Principals[0].Token != "alice-token-0123456789" || opts.Loopback {
		t.Fatalf("%v %+v", err, opts)
	}
	for _, c := range []struct {
		p    []config.Principal
		want string
	}{
		{[]config.Principal{{Name: "x", Token: config.Secret{Env: "LC_UNSET"}}}, "serve.principals x: token ($LC_UNSET)"},
		{[]config.Principal{{Name: "x", Token: config.Secret{Env: "LC_SHORT"}}}, "at least 16 characters"},
		{[]config.Principal{alice, {Name: "bob", Token: config.Secret{Env: "LC_BOB"}}}, "its token is also alice's"},
		{nil, "without a token"},
	} {
		if _, _, err := httpOptions(":0", serve(c.p...)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.p, err, c.want)
		}
	}
}
