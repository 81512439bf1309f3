package cli

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemode-go/codemode/internal/testtools/redistest"
)

// TestExecKilledWaitElsewhere is issue 15's two-process test with the real binary: exec on A
// returns waiting, A is killed (SIGKILL), and `codemode wait` in process B resumes the run from
// Redis (A is killed right after its first line, before it even exits on its own: --no-wait
// keeps it from taking the run's lease with a wait of its own): a replay-safe call (web_fetch) runs again on B; a side effect (the shell tool) is never
// re-run and fails into the cell instead.
func TestExecKilledWaitElsewhere(t *testing.T) {
	bin := binary(t)
	srv := redistest.Start(t)
	var hits atomic.Int64
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 { // the first fetch hangs (A dies meanwhile); the reissued one answers
			select {
			case <-time.After(30 * time.Second):
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("page " + r.URL.Query().Get("n")))
	}))
	defer slow.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "codemode.json5")
	if err := os.WriteFile(cfg, []byte(`{
  workspace: "`+dir+`",
  tools: { codeMode: { enabled: true, timeoutMs: 1500 }, exec: { enabled: true }, webFetch: { allowPrivateNetworks: true } },
  runtime: { compileCache: false },
  runStore: { redis: { url: "`+srv.URL()+`", keyEnv: "CODEMODE_TEST_RUNSTORE_KEY" } },
}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "CODEMODE_TEST_RUNSTORE_KEY="+strings.Repeat("ab", 32))

	execKilled := func(t *testing.T, code string) string {
		t.Helper()
		cmd := exec.Command(bin, "exec", "--no-wait", "--config", cfg, "--code", code)
		cmd.Env = env
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		_ = cmd.Process.Kill() // A dies: no cleanup, no goodbye
		_ = cmd.Wait()
		if err != nil {
			t.Fatalf("no first line: %v", err)
		}
		var res struct {
			Status, RunID string
		}
		if err := json.Unmarshal([]byte(line), &res); err != nil || res.Status != "waiting" || res.RunID == "" {
			t.Fatalf("first line %q: %v", line, err)
		}
		return res.RunID
	}
	waitOn := func(t *testing.T, runID string) (last map[string]any, lines int, code int) {
		t.Helper()
		cmd := exec.Command(bin, "wait", "--config", cfg, runID)
		cmd.Env = env
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		code = 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		all := strings.Split(strings.TrimSpace(string(out)), "\n")
		if err := json.Unmarshal([]byte(all[len(all)-1]), &last); err != nil {
			t.Fatalf("%v: %s\n%s", err, out, stderr.String())
		}
		return last, len(all), code
	}

	t.Run("ReplaySafe", func(t *testing.T) {
		id := execKilled(t, `const r = await tools.callValue("native:core:web_fetch", {url: "`+slow.URL+`/?slow=1&n=1"}); return "done"`)
		last, _, code := waitOn(t, id)
		if code != 0 || last["status"] != "completed" || last["value"] != "done" {
			t.Fatalf("exit %d, %v", code, last)
		}
	})
	t.Run("SideEffect", func(t *testing.T) {
		id := execKilled(t, `try { await tools.callValue("native:core:exec", {command: "sleep 30"}); return "ran" } catch (e) { return e.code }`)
		last, _, code := waitOn(t, id)
		if code != 0 || last["status"] != "completed" || last["value"] != "lost_on_replica" {
			t.Fatalf("exit %d, %v", code, last)
		}
	})
	t.Run("NoSharedStore", func(t *testing.T) {
		cmd := exec.Command(bin, "wait", "run_x")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "runStore") {
			t.Fatalf("%v: %s", err, stderr.String())
		}
	})
}
