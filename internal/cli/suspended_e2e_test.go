package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/codemode-go/codemode/api"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// issue 18 item 5, with the real binary and the default limits (runtime.suspended unset): 5 MCP
// sessions × 16 suspended runs all succeed (the old fixed cap of 64 refused the fifth session);
// the 17th run of a session is refused with the per-session message, which names what to do;
// every run then completes.
func TestServeFiveSessionsSixteenSuspendedRuns(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "codemode.json5")
	if err := os.WriteFile(cfg, []byte(`{ workspace: "`+dir+`", tools: { codeMode: { enabled: true } } }`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, nil, "--http", "127.0.0.1:0", "--config", cfg)
	ctx := context.Background()
	call := func(cs *mcp.ClientSession, tool string, args map[string]any) (api.ExecResult, error) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			return api.ExecResult{}, err
		}
		var out api.ExecResult
		if len(res.Content) == 0 {
			return out, fmt.Errorf("empty result")
		}
		err = json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &out)
		return out, err
	}
	const sessions, perSession = 5, 16
	clients := make([]*mcp.ClientSession, sessions)
	runs := make([][]string, sessions)
	var wg sync.WaitGroup
	for i := range clients {
		clients[i] = connectHTTP(t, s.base+"/mcp", "")
		wg.Add(1)
		go func() { // the sessions suspend their runs at the same time
			defer wg.Done()
			for j := range perSession {
				r, err := call(clients[i], "exec", map[string]any{"code": fmt.Sprintf(`await yield_control(); return "%d/%d"`, i, j)})
				if err != nil || r.Status != api.StatusWaiting {
					t.Errorf("session %d, run %d: %v %+v", i, j, err, r)
					return
				}
				runs[i] = append(runs[i], r.RunID)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	r, err := call(clients[0], "exec", map[string]any{"code": `await yield_control(); return "17th"`})
	if err != nil || r.Status != api.StatusFailed || r.Code != api.CodeInvalidInput ||
		!strings.Contains(r.Error, "in this session: finish some with wait first") {
		t.Fatalf("the 17th run of a session: %v %+v", err, r)
	}
	for i, ids := range runs {
		for j, id := range ids {
			r, err := call(clients[i], "wait", map[string]any{"runId": id})
			if err != nil || r.Status != api.StatusCompleted || string(r.Value) != fmt.Sprintf(`"%d/%d"`, i, j) {
				t.Fatalf("wait %d/%d: %v %+v", i, j, err, r)
			}
		}
	}
	// Finishing them freed the session's share at once.
	if r, err := call(clients[0], "exec", map[string]any{"code": `await yield_control(); return 1`}); err != nil || r.Status != api.StatusWaiting {
		t.Fatalf("after the waits: %v %+v", err, r)
	}
}
