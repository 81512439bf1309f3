package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
)

// postRaw sends one raw JSON-RPC body to url and returns the status and the body (an SSE stream's
// data lines joined).
func postRaw(t *testing.T, url, body string, headers map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var data []string
	for _, l := range strings.Split(string(b), "\n") {
		if d, ok := strings.CutPrefix(l, "data: "); ok {
			data = append(data, d)
		}
	}
	if len(data) > 0 {
		return resp.StatusCode, strings.Join(data, "\n")
	}
	return resp.StatusCode, string(b)
}

var stateless = map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}

const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

// TestMalformedRequestsGetJSONRPCErrors: every malformed request on HTTP gets a JSON-RPC error
// object with a non-zero code, never plain text (issue 18 item 8).
func TestMalformedRequestsGetJSONRPCErrors(t *testing.T) {
	srv, _, ctx := openServer(t, config.Default(), nil)
	ts := httptest.NewServer(srv.HTTPHandler(ctx, HTTPOptions{Loopback: true}))
	t.Cleanup(ts.Close)
	url := ts.URL + "/mcp"
	deep := strings.Repeat("[", 1001) + strings.Repeat("]", 1001)
	cases := []struct {
		name    string
		body    string
		headers map[string]string
		code    int
	}{
		{"empty object", `{}`, nil, -32600},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, nil, -32600},
		{"empty batch", `[]`, nil, -32600},
		{"deep array", deep, nil, -32600},
		{"deep params", `{"jsonrpc":"2.0","id":1,"method":"ping","params":` + strings.Repeat(`{"a":`, 1001) + "1" + strings.Repeat("}", 1001) + `}`, nil, -32600},
		{"not JSON", `{"jsonrpc":`, nil, -32700},
		{"a string", `"ping"`, nil, -32600},
		{"wrong version", `{"jsonrpc":"1.0","id":1,"method":"ping"}`, nil, -32600},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, nil, -32600},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, nil, -32600},
		{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"nope"}`, nil, -32601},
		{"before initialize", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil, 0},
		{"unknown session", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"Mcp-Session-Id": "nope"}, codeSessionEnded},
		{"stateless unknown method", `{"jsonrpc":"2.0","id":1,"method":"nope","params":{` + meta + `}}`, stateless, -32601},
		{"stateless initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{` + meta + `}}`, stateless, 0},
		{"stateless without meta", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, stateless, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, body := postRaw(t, url, c.body, c.headers)
			var m struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   *rpcError       `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &m); err != nil || m.JSONRPC != "2.0" || m.Error == nil || m.Error.Code == 0 ||
				(c.code != 0 && m.Error.Code != c.code) {
				t.Fatalf("%s", body)
			}
		})
	}
	// Non-POST requests and wrong content types too.
	for _, c := range []struct{ method, ctype string }{{"GET", ""}, {"PUT", "application/json"}, {"POST", "text/plain"}} {
		req, _ := http.NewRequest(c.method, url, strings.NewReader("{}"))
		req.Header.Set("Accept", "application/json, text/event-stream")
		if c.ctype != "" {
			req.Header.Set("Content-Type", c.ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 400 || !strings.Contains(string(b), `"jsonrpc":"2.0"`) || strings.Contains(string(b), `"code":0`) {
			t.Fatalf("%s %s: %d %s", c.method, c.ctype, resp.StatusCode, b)
		}
	}
}

// TestRequestIDsEchoedExactly: ids the SDK would rewrite (1.5e308 became -9223372036854775808)
// come back byte for byte, over HTTP (both generations) and stdio (issue 18 item 8).
func TestRequestIDsEchoedExactly(t *testing.T) {
	srv, _, ctx := openServer(t, config.Default(), nil)
	ts := httptest.NewServer(srv.HTTPHandler(ctx, HTTPOptions{Loopback: true}))
	t.Cleanup(ts.Close)
	ids := []string{`1.5e308`, `1.0`, `-0`, `12345678901234567890`, `"\u0041"`, `"a\/b"`, `7`, `"plain"`}
	for _, id := range ids {
		body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list","params":{` + meta + `}}`
		_, got := postRaw(t, ts.URL+"/mcp", body, stateless)
		if !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":`+id+`,"result":`) {
			t.Errorf("stateless id %s: %s", id, got[:min(len(got), 120)])
		}
		_, got = postRaw(t, ts.URL+"/mcp", `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`, nil)
		if !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":`+id+`,"result":`) {
			t.Errorf("session-protocol id %s: %s", id, got[:min(len(got), 120)])
		}
	}
	send, recvRaw := stdioRaw(t)
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	recvRaw()
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, id := range ids {
		send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		if got := recvRaw(); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":`+id+`,"result":`) {
			t.Errorf("stdio id %s: %s", id, got)
		}
	}
	send(`{}`)
	if got := recvRaw(); !strings.Contains(got, `"code":-32600`) {
		t.Errorf("stdio {}: %s", got)
	}
}

// stdioRaw is stdioSession with raw lines.
func stdioRaw(t *testing.T) (send func(string), recv func() string) {
	t.Helper()
	srv, _, ctx := openServer(t, config.Default(), nil)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() { _ = srv.Run(ctx, StdioTransport(inR, outW)) }()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return func(s string) { _, _ = io.WriteString(inW, s+"\n") }, func() string {
		select {
		case l := <-lines:
			return l
		case <-time.After(30 * time.Second):
			t.Fatal("no reply")
			return ""
		}
	}
}

// hangTool blocks until its call is cancelled, reporting both moments.
func hangTool() (*api.Tool, chan struct{}, chan struct{}) {
	started, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
	return &api.Tool{Name: "hang", Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
		started <- struct{}{}
		<-ctx.Done()
		cancelled <- struct{}{}
		return nil, ctx.Err()
	}}, started, cancelled
}

func within(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second): // a generous bound: it proves the cancellation happens at all
		t.Fatalf("%s did not happen", what)
	}
}

// TestDroppedConnectionCancels: a request whose HTTP connection drops cancels its exec, in
// both protocol generations (issue 19 item 6).
func TestDroppedConnectionCancels(t *testing.T) {
	cfg := config.Default()
	cfg.Tools.CodeMode.TimeoutMs = 60000
	hang, started, cancelled := hangTool()
	srv, _, ctx := openServer(t, cfg, []*api.Tool{hang})
	ts := httptest.NewServer(srv.HTTPHandler(ctx, HTTPOptions{Loopback: true}))
	t.Cleanup(ts.Close)
	url := ts.URL + "/mcp"
	sess := sessionClient(t, url, "")
	for _, gen := range []string{"stateless", "session"} {
		t.Run(gen, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"exec","arguments":{"code":"await tools.hang({}); return 1"}`
			h := map[string]string{"Mcp-Session-Id": sess.ID(), "Mcp-Protocol-Version": sessionProtocol}
			if gen == "stateless" {
				body += "," + meta
				h = map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "exec"}
			}
			body += "}}"
			rctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(rctx, "POST", url, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range h {
				req.Header.Set(k, v)
			}
			errc := make(chan error, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					_, err = io.ReadAll(resp.Body)
					resp.Body.Close()
				}
				errc <- err
			}()
			within(t, started, "the nested call")
			cancel() // the client goes away
			within(t, cancelled, "the cancellation of the nested call")
			<-errc
		})
	}
}

// TestNoResponseAfterCancel: after notifications/cancelled the cancelled request gets no
// response, over HTTP sessions and stdio (issue 19 item 6).
func TestNoResponseAfterCancel(t *testing.T) {
	cfg := config.Default()
	cfg.Tools.CodeMode.TimeoutMs = 60000
	hang, started, cancelled := hangTool()
	srv, _, ctx := openServer(t, cfg, []*api.Tool{hang})
	ts := httptest.NewServer(srv.HTTPHandler(ctx, HTTPOptions{Loopback: true}))
	t.Cleanup(ts.Close)
	url := ts.URL + "/mcp"
	sess := sessionClient(t, url, "")
	h := map[string]string{"Mcp-Session-Id": sess.ID(), "Mcp-Protocol-Version": sessionProtocol}
	got := make(chan string, 1)
	go func() {
		_, b := postRaw(t, url, `{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"exec","arguments":{"code":"await tools.hang({}); return 1"}}}`, h)
		got <- b
	}()
	within(t, started, "the nested call")
	if code, b := postRaw(t, url, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c-1","reason":"user"}}`, h); code != http.StatusAccepted {
		t.Fatalf("%d %s", code, b)
	}
	within(t, cancelled, "the cancellation")
	if b := <-got; strings.Contains(b, `"id":"c-1"`) {
		t.Fatalf("a response followed the cancellation: %s", b)
	}
	// The session goes on.
	if r := callExec(t, sess, "exec", map[string]any{"code": `return "still here"`}); r.Status != api.StatusCompleted {
		t.Fatalf("%+v", r)
	}

	// stdio
	send, recv := stdioRawWith(t, cfg, hang)
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	recv()
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"exec","arguments":{"code":"await tools.hang({}); return 1"}}}`)
	within(t, started, "the nested call (stdio)")
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":41}}`)
	within(t, cancelled, "the cancellation (stdio)")
	send(`{"jsonrpc":"2.0","id":42,"method":"ping"}`)
	if l := recv(); !strings.HasPrefix(l, `{"jsonrpc":"2.0","id":42,`) {
		t.Fatalf("after the cancel the next line is %s", l)
	}
}

func stdioRawWith(t *testing.T, cfg *config.Config, tools ...*api.Tool) (send func(string), recv func() string) {
	t.Helper()
	srv, _, ctx := openServer(t, cfg, tools)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() { _ = srv.Run(ctx, StdioTransport(inR, outW)) }()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return func(s string) { _, _ = io.WriteString(inW, s+"\n") }, func() string {
		select {
		case l := <-lines:
			return l
		case <-time.After(30 * time.Second):
			t.Fatal("no reply")
			return ""
		}
	}
}

// TestRefusalWaitsForNoBody: a 401 is answered while the body has not arrived, and the
// connection is closed (issue 18 item 2).
func TestRefusalWaitsForNoBody(t *testing.T) {
	srv, _, ctx := openServer(t, config.Default(), nil)
	ts := httptest.NewServer(srv.HTTPHandler(ctx, HTTPOptions{Loopback: true, Token: "0123456789abcdef0123"}))
	t.Cleanup(ts.Close)
	c, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 200000\r\n\r\n{")
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body) // ends when the server closes the connection
	if resp.StatusCode != http.StatusUnauthorized || !resp.Close || !bytes.Contains(b, []byte(`"code":-32001`)) {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, b)
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("the connection stayed open")
	}
}

// TestLimitListener: connections past the per-client and global caps are closed at accept,
// and a slot frees when a connection closes.
func TestLimitListener(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := LimitListener(tcp, 3, 2)
	defer ln.Close()
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", tcp.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	closedByServer := func(c net.Conn) bool {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := c.Read(make([]byte, 1))
		return err != nil && !isTimeout(err)
	}
	dial()
	dial()
	<-accepted
	first := <-accepted
	// The per-client cap of 2: the third is reset at accept (possibly before Dial returns).
	if third, err := net.Dial("tcp", tcp.Addr().String()); err == nil {
		defer third.Close()
		if !closedByServer(third) {
			t.Fatal("a third connection from one address was kept")
		}
	}
	for i := 0; i < 100; i++ { // the refusal is counted once the accept loop saw it
		if _, refused := ln.Stats(); refused == 1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if open, refused := ln.Stats(); open != 2 || refused != 1 {
		t.Fatalf("open %d refused %d", open, refused)
	}
	first.Close()
	dial()
	select {
	case <-accepted:
	case <-time.After(10 * time.Second):
		t.Fatal("a freed slot was not reused")
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// TestStatelessProtocol checks the sessionless 2026-07-28 generation over raw HTTP, as the
// conformance suite does for the session protocol (its 0.1.16 has no 2026-07-28 scenarios): each
// row is one check, and all of them must run and pass (issue 19 item 1).
func TestStatelessProtocol(t *testing.T) {
	srv, _, ctx := openServer(t, config.Default(), nil)
	ts := httptest.NewServer(srv.HTTPHandler(ctx, HTTPOptions{Loopback: true}))
	t.Cleanup(ts.Close)
	url := ts.URL + "/mcp"
	h := func(method, name string) map[string]string {
		m := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method}
		if name != "" {
			m["Mcp-Name"] = name
		}
		return m
	}
	req := func(id int, method, params string) string {
		if params != "" {
			params = "," + params
		}
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s%s}}`, id, method, meta, params)
	}
	checks := []struct {
		name    string
		body    string
		headers map[string]string
		want    []string // substrings of the response
	}{
		{"discover lists both generations", req(1, "server/discover", ""), h("server/discover", ""),
			[]string{`"supportedVersions":["2026-07-28","2025-11-25"`, `"tools":{"listChanged":true}`, `"io.modelcontextprotocol/serverInfo"`}},
		{"tools/list without a session", req(2, "tools/list", ""), h("tools/list", ""), []string{`"name":"exec"`, `"name":"wait"`, `"resultType":"complete"`}},
		{"tools/call without a session", req(3, "tools/call", `"name":"exec","arguments":{"code":"return 6*7"}`), h("tools/call", "exec"), []string{`\"value\":42`}},
		{"initialize is gone", req(4, "initialize", ""), h("initialize", ""), []string{`"code":-32601`}},
		{"ping is gone", req(5, "ping", ""), h("ping", ""), []string{`"code":-32601`}},
		{"Mcp-Method is required", req(6, "tools/list", ""), map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, []string{`"code":-32020`}},
		{"Mcp-Method must match", req(7, "tools/list", ""), h("tools/call", ""), []string{`"code":-32020`}},
		{"Mcp-Name must match", req(8, "tools/call", `"name":"exec","arguments":{"code":"1"}`), h("tools/call", "wait"), []string{`"code":-32020`}},
		{"header and _meta versions must match", req(9, "tools/list", ""), map[string]string{"Mcp-Protocol-Version": "2025-11-25", "Mcp-Method": "tools/list"}, []string{`"error"`}},
		{"an unknown method is -32601", req(10, "nope/nope", ""), h("nope/nope", ""), []string{`"code":-32601`}},
		{"an unsupported version lists the supported ones", strings.Replace(req(11, "tools/list", ""), "2026-07-28", "2099-01-01", 1),
			map[string]string{"Mcp-Protocol-Version": "2099-01-01", "Mcp-Method": "tools/list"}, []string{`"code":-32022`, `2026-07-28`}},
	}
	passed := 0
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", url, strings.NewReader(c.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range c.headers {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.Header.Get("Mcp-Session-Id") != "" {
				t.Fatalf("a sessionless request got a session: %s", resp.Header.Get("Mcp-Session-Id"))
			}
			for _, w := range c.want {
				if !strings.Contains(string(b), w) {
					t.Fatalf("no %s in %d %s", w, resp.StatusCode, b)
				}
			}
			passed++
		})
	}
	if passed != len(checks) || passed < 11 {
		t.Fatalf("%d of %d checks passed", passed, len(checks))
	}
}
