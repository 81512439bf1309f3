package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/gateway"
)

// stdioSession runs the server on a stdio transport with a small line limit and returns a
// function that sends one line and one that reads the next reply.
func stdioSession(t *testing.T, maxLine int) (send func(string), recv func() map[string]any) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	g, err := gateway.Open(ctx, config.Default(), gateway.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := New(g, nil)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, stdioTransport(inR, outW, maxLine)) }()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the session did not end after stdin closed")
		}
		cancel()
		outR.Close()
		g.Close()
	})
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	send = func(s string) {
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	recv = func() map[string]any {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("stdout closed: the session ended")
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("not JSON: %q", l)
			}
			return m
		case <-time.After(20 * time.Second):
			t.Fatal("no reply")
		}
		return nil
	}
	return send, recv
}

func errCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

func TestStdioSurvivesBadLines(t *testing.T) { // a malformed or oversized line gets an error; the session goes on
	send, recv := stdioSession(t, 4096)
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if r := recv(); r["result"] == nil {
		t.Fatalf("initialize: %v", r)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	cases := []struct {
		name string
		line string
		code float64
		id   any
	}{
		{"not JSON", `{"jsonrpc":"2.0","id":2,"method":`, -32700, nil},
		{"garbage bytes", "\x00\xff hello", -32700, nil},
		{"oversized", `{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":"` + strings.Repeat("a", 8192) + `"}}`, -32600, nil},
		{"batch", `[{"jsonrpc":"2.0","id":4,"method":"ping"}]`, -32600, nil},
		{"not a message", `{"jsonrpc":"2.0","id":5}`, -32600, float64(5)},
		{"unknown method", `{"jsonrpc":"2.0","id":6,"method":"tools/frobnicate","params":{}}`, -32601, float64(6)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			send(c.line)
			r := recv()
			if errCode(r) != c.code || r["id"] != c.id {
				t.Fatalf("reply %v, want code %v id %v", r, c.code, c.id)
			}
			// The session still answers.
			send(`{"jsonrpc":"2.0","id":"after","method":"tools/list"}`)
			if r := recv(); r["id"] != "after" || r["result"] == nil {
				t.Fatalf("after %s: %v", c.name, r)
			}
		})
	}
	// Blank lines are ignored.
	send("")
	send(`{"jsonrpc":"2.0","id":7,"method":"ping"}`)
	if r := recv(); r["id"] != float64(7) {
		t.Fatalf("%v", r)
	}
}

func FuzzLineFilter(f *testing.F) { // whatever arrives, the filter only passes single valid messages on
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `[]`, `{`, "\n\n", `{"jsonrpc":"2.0","id":{},"method":"x"}`, `"x"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var replies strings.Builder
		lf := &lineFilter{br: bufio.NewReader(strings.NewReader(in)), src: strings.NewReader(""), out: &lockedWriter{w: &replies}, max: 256}
		out, _ := io.ReadAll(lf)
		for _, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
			if line == "" {
				continue
			}
			if !json.Valid([]byte(line)) || line[0] == '[' || len(line) > 258 {
				t.Fatalf("passed on %q", line)
			}
		}
		for _, line := range strings.Split(strings.TrimSuffix(replies.String(), "\n"), "\n") {
			if line != "" && !json.Valid([]byte(line)) {
				t.Fatalf("invalid reply %q", line)
			}
		}
	})
}

func TestKnownMethods(t *testing.T) { // the HTTP endpoint's list of methods matches what the SDK serves
	send, recv := stdioSession(t, MaxStdioLine)
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	recv()
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	id := 0
	for m := range knownMethods {
		if strings.HasPrefix(m, "notifications/") || m == "initialize" || m == "server/discover" || m == "subscriptions/listen" {
			continue // notifications get no reply; these two belong to other protocol versions
		}
		id++
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": m, "params": map[string]any{}})
		send(string(b))
		if r := recv(); errCode(r) == -32601 {
			t.Errorf("%s: the SDK does not serve it: %v", m, r)
		}
	}
	send(`{"jsonrpc":"2.0","id":"x","method":"no/such"}`)
	if r := recv(); errCode(r) != -32601 {
		t.Errorf("unknown method: %v", r)
	}
}
