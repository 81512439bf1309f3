package agent

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/provider"
	"github.com/codemode-go/codemode/internal/provider/scripted"
)

var update = flag.Bool("update", false, "rewrite golden files")

// newRuntime is a code-mode runtime for tests; mutate changes its options.
func newRuntime(t testing.TB, mutate func(o *codemode.Options)) *codemode.Runtime {
	t.Helper()
	cfg := config.Default()
	cfg.Tools.CodeMode.Enabled = true
	cfg.Tools.CodeMode.TimeoutMs = 3000
	cfg.Workspace = t.TempDir()
	o := codemode.ConfigOptions(cfg)
	if mutate != nil {
		mutate(&o)
	}
	rt, err := codemode.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if rt.Err() != nil {
		t.Skipf("code mode runtime unavailable (run `make wasm`): %v", rt.Err())
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// client is a provider client for a scripted server, with the surface's payload check (A10).
func client(t testing.TB, srv *scripted.Server, prov string, stream bool, s *codemode.Surface) provider.Client {
	t.Helper()
	c, err := provider.New(provider.Options{Provider: prov, BaseURL: srv.BaseURL(prov), Stream: stream,
		CheckPayload: s.CheckPayload, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// execCall is a scripted turn that runs code.
func execCall(code string) scripted.Turn {
	b, _ := json.Marshal(map[string]string{"code": code})
	return scripted.Call("exec", string(b))
}

// tool is a native tool returning details.
func tool(name string, readOnly bool, run func(in json.RawMessage) (any, error)) *api.Tool {
	return &api.Tool{Name: name, Description: "The " + name + " tool.", ReadOnly: readOnly,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`),
		Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
			v, err := run(c.Input)
			if err != nil {
				return nil, err
			}
			return api.TextResult("ok", v)
		}}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if string(want) != got {
		t.Fatalf("%s differs (run with -update to accept):\n%s", name, got)
	}
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
