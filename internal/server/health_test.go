package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/testtools/redistest"
	"github.com/redis/go-redis/v9"
)

// issue 20 item 5, issue 18 item 8: /readyz includes the shared run store and says which part
// is down — Redis stopped ("unreachable"), Redis at maxmemory refusing writes ("full") — and is
// ready again when it recovers; /metrics has the store's series.
func TestReadyzReflectsRunStore(t *testing.T) {
	srv := redistest.StartWith(t, redistest.Config{MaxMemory: "4mb"})
	t.Setenv("CODEMODE_TEST_STORE_KEY", strings.Repeat("ab", 32))
	cfg := config.Default()
	cfg.Tools.CodeMode.Enabled = true
	cfg.RunStore.Redis = &config.RedisStore{Mode: config.RedisStandalone, URL: srv.URL(), KeyEnv: "CODEMODE_TEST_STORE_KEY", TimeoutMs: 500}
	s, _, _ := openServer(t, cfg, nil)
	h := httptest.NewServer(s.HTTPHandler(context.Background(), HTTPOptions{Loopback: true}))
	defer h.Close()
	ready := func() (int, Readiness) {
		t.Helper()
		res, err := http.Get(h.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var r Readiness
		if err := json.NewDecoder(res.Body).Decode(&r); err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, r
	}
	if code, r := ready(); code != 200 || r.RunStore == nil || r.RunStore.State != "ok" || r.RunStore.Mode != "standalone" {
		t.Fatalf("healthy store: %d %+v %+v", code, r, r.RunStore)
	}

	// Full: fill Redis past maxmemory with a key of our own (noeviction refuses writes).
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
	defer rdb.Close()
	// Small values, as a busy store fills: Redis refuses writes once used memory is past
	// maxmemory (a large write can be refused earlier, when its own buffer tips it over).
	for i, full := 0, false; !full; i++ {
		pipe := rdb.Pipeline()
		for j := range 500 {
			pipe.Set(context.Background(), "filler:"+strconv.Itoa(i*500+j), strings.Repeat("x", 1024), 0)
		}
		cmds, _ := pipe.Exec(context.Background())
		for _, c := range cmds {
			if err := c.Err(); err != nil {
				if !strings.HasPrefix(err.Error(), "OOM") {
					t.Fatal(err)
				}
				full = true
			}
		}
	}
	if code, r := ready(); code != 503 || r.Ready || r.RunStore.State != "full" || !strings.Contains(r.RunStore.LastError, "maxmemory") {
		t.Fatalf("full store: %d %+v", code, r.RunStore)
	}
	if err := rdb.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	if code, r := ready(); code != 200 || r.RunStore.State != "ok" {
		t.Fatalf("after freeing memory: %d %+v", code, r.RunStore)
	}

	res, err := http.Get(h.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{"codemode_runstore_up 1", "codemode_runstore_runs 0", `codemode_runstore_op_duration_seconds_count{mode="standalone",op="ping"}`,
		`codemode_runstore_errors_total{kind="full",mode="standalone",op="ping"}`, "codemode_runstore_takeovers_total 0", "codemode_runstore_busy_waits_total 0"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	// Down: the probe answers within its bound and says unreachable.
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	code, r := ready()
	if code != 503 || r.RunStore.State != "unreachable" || time.Since(start) > 2*storeProbeTimeout {
		t.Fatalf("stopped store: %d %+v after %v", code, r.RunStore, time.Since(start))
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if code, _ := ready(); code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not ready again after Redis came back")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
