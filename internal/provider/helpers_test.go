package provider

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codemode-go/codemode/internal/provider/scripted"
)

// The model surface of a code-mode run: what A10 expects to see.
var (
	execSchema = json.RawMessage(`{"type":"object","properties":{"code":{"type":"string","description":"JavaScript or TypeScript cell"},"language":{"type":"string","enum":["javascript","typescript"]}},"required":["code"],"additionalProperties":false}`)
	waitSchema = json.RawMessage(`{"type":"object","properties":{"runId":{"type":"string"}},"required":["runId"],"additionalProperties":false}`)
	surface    = []ToolDef{
		{Name: "exec", Description: "Run a code-mode cell.", InputSchema: execSchema},
		{Name: "wait", Description: "Wait for a suspended run.", InputSchema: waitSchema},
	}
)

type variant struct {
	provider string
	stream   bool
}

func (v variant) String() string {
	if v.stream {
		return v.provider + "/stream"
	}
	return v.provider + "/json"
}

var variants = []variant{{OpenAI, false}, {OpenAI, true}, {Anthropic, false}, {Anthropic, true}}

// newClient builds a Client for the scripted server with its own transport, closed when the
// test ends so idle connections do not count as leaked goroutines.
func newClient(t testing.TB, srv *scripted.Server, v variant, mod func(*Options)) Client {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	o := Options{Provider: v.provider, BaseURL: srv.BaseURL(v.provider), APIKey: "sk-test-0123456789abcdefghij",
		Stream: v.stream, HTTPClient: &http.Client{Transport: tr}, MaxRetryDelay: 5 * time.Second}
	if mod != nil {
		mod(&o)
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// logBuffer captures slog records as JSON lines, safe for concurrent writers.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// records returns the decoded records whose msg is msg.
func (l *logBuffer) records(t testing.TB, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// checkGoroutines fails if goroutines started during the test are still running at its end.
func checkGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<16)
			t.Errorf("%d goroutines leaked:\n%s", n-before, buf[:runtime.Stack(buf, true)])
		}
	})
}

// newLoopback serves h on a loopback port until the test ends and returns its URL.
func newLoopback(t testing.TB, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
