package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/gateway"
	"github.com/codemode-go/codemode/internal/runstore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type bearerRT struct{ token string }

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestPrincipalScopedRuns: with a shared run store and a token, a run belongs to the principal,
// so another session of the same client (a reconnect, possibly to another replica) waits on it,
// and closing the first session does not drop it (issue 15 item 4).
func TestPrincipalScopedRuns(t *testing.T) {
	cfg := config.Default()
	cfg.Tools.CodeMode.TimeoutMs = 1000
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g, err := gateway.Open(ctx, cfg, gateway.Options{RunStore: runstore.NewMemDurable(runstore.Limits{})})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	srv := New(g, nil)
	defer srv.Close()
	const token = "0123456789abcdef0123456789abcdef"
	hs := httptest.NewServer(srv.HTTPHandler(ctx, HTTPOptions{Token: token, Loopback: true}))
	defer hs.Close()
	connect := func() *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp", HTTPClient: &http.Client{Transport: bearerRT{token}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	first := connect()
	res := callExec(t, first, "exec", map[string]any{"code": `await yield_control(); return "resumed"`})
	if res.Status != api.StatusWaiting {
		t.Fatalf("%+v", res)
	}
	_ = first.Close()
	second := connect()
	defer second.Close()
	got := callExec(t, second, "wait", map[string]any{"runId": res.RunID})
	if got.Status != api.StatusCompleted || string(got.Value) != `"resumed"` {
		t.Fatalf("%+v", got)
	}
}
