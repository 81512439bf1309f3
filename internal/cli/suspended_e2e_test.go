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
	"github.com/codemode-go/codemode/internal/testtools/redistest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// issue 18 item 5, with the real binary and the default limits (runtime.suspended unset): 5 MCP
// clients × 16 suspended runs all succeed (the old fixed cap of 64 refused the fifth), on a
// loopback listener without credentials (the clients are the one "anonymous" principal) and on a
// token with a shared Redis run store (the token's principal: a fleet's client); a principal's
// runs belong to none of its sessions, so one client holds more than maxRunsPerSession (16).
// Every run then completes.
func TestServeFiveSessionsSixteenSuspendedRuns(t *testing.T) {
	for _, fleet := range []bool{false, true} {
		t.Run(map[bool]string{false: "loopback", true: "token+redis"}[fleet], func(t *testing.T) {
			dir := t.TempDir()
			conf, env, token := `{ workspace: "`+dir+`", tools: { codeMode: { enabled: true } } }`, []string(nil), ""
			if fleet {
				srv := redistest.Start(t)
				conf = `{ workspace: "` + dir + `", tools: { codeMode: { enabled: true } },
  runStore: { redis: { url: "` + srv.URL() + `", keyEnv: "CODEMODE_TEST_RUNSTORE_KEY" } } }`
				token = testToken
				env = []string{"CODEMODE_TOKEN=" + token, "CODEMODE_TEST_RUNSTORE_KEY=" + strings.Repeat("ab", 32)}
			}
			cfg := filepath.Join(dir, "codemode.json5")
			if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
				t.Fatal(err)
			}
			fiveSessions(t, startServe(t, env, "--http", "127.0.0.1:0", "--config", cfg), token)
		})
	}
}

func fiveSessions(t *testing.T, s *served, token string) {
	ctx := context.Background()
	call := func(cs *mcp.ClientSession, tool string, args map[string]any) (api.ExecResult, error) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			return api.ExecResult{}, err
		}
		var out api.ExecResult
		raw, _ := json.Marshal(res.StructuredContent)
		err = json.Unmarshal(raw, &out)
		return out, err
	}
	const sessions, perSession = 5, 17 // one more than maxRunsPerSession's default
	clients := make([]*mcp.ClientSession, sessions)
	runs := make([][]string, sessions)
	var wg sync.WaitGroup
	for i := range clients {
		clients[i] = connectHTTP(t, s.base+"/mcp", token)
		wg.Add(1)
		go func() { // the clients suspend their runs at the same time
			defer wg.Done()
			for j := range perSession {
				r, err := call(clients[i], "exec", map[string]any{"code": fmt.Sprintf(`await yield_control(); return "%d/%d"`, i, j)})
				if err != nil || r.Status != api.StatusWaiting {
					t.Errorf("client %d, run %d: %v %+v", i, j, err, r)
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
	for i, ids := range runs {
		for j, id := range ids {
			r, err := call(clients[i], "wait", map[string]any{"runId": id})
			if err != nil || r.Status != api.StatusCompleted || string(r.Value) != fmt.Sprintf(`"%d/%d"`, i, j) {
				t.Fatalf("wait %d/%d: %v %+v", i, j, err, r)
			}
		}
	}
}
