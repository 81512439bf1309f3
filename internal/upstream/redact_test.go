package upstream

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/codemode-go/codemode/config"
)

func TestRedactor(t *testing.T) {
	cases := []struct{ url, in, want string }{
		{"https://user:pa55word@h.example/mcp?api_key=sk-123&x=y", `Post "https://user:pa55word@h.example/mcp?api_key=sk-123&x=y": refused`,
			`Post "https://REDACTED@h.example/mcp?api_key=REDACTED&x=REDACTED": refused`},
		{"http://h.example/mcp?token=a%2Fb+c", "got token a/b c and a%2Fb+c", "got token REDACTED and REDACTED"},
		{"http://h.example/mcp", "nothing secret", "nothing secret"},
		// issue 18 item 8: secrets in the path and the fragment, raw and escaped.
		{"https://mcp.example/v1/sk-live-4f9a8b7c6d5e/mcp", `Post "https://mcp.example/v1/sk-live-4f9a8b7c6d5e/mcp": EOF; key sk-live-4f9a8b7c6d5e`,
			`Post "https://mcp.example/v1/REDACTED/mcp": EOF; key REDACTED`},
		{"https://hooks.example/mcp/3f2b9c1e-8d7a-4b6c-9e5f-1a2b3c4d5e6f/sse", "dial https://hooks.example/mcp/3f2b9c1e-8d7a-4b6c-9e5f-1a2b3c4d5e6f/sse: refused",
			"dial https://hooks.example/mcp/REDACTED/sse: refused"},
		{"https://h.example/t/abc%2Fdef%2Fghi%2F12345/mcp", "GET https://h.example/t/abc%2Fdef%2Fghi%2F12345/mcp and abc/def/ghi/12345",
			"GET https://h.example/t/REDACTED/mcp and REDACTED"},
		{"https://h.example/mcp#tok3n", "https://h.example/mcp#tok3n tok3n", "https://h.example/mcp#REDACTED REDACTED"},
		{"https://h.example/api/v2/my-company/mcp", "the mcp server at https://h.example/api/v2/my-company/mcp said no",
			"the mcp server at https://h.example/api/v2/my-company/mcp said no"}, // routes stay readable
	}
	for _, c := range cases {
		t.Run(c.url, func(t *testing.T) {
			if got := newRedactor(c.url).String(c.in); got != c.want {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
		})
	}
	base := errors.New("dial https://u:secretpw@h/x")
	err := newRedactor("https://u:secretpw@h/x").scrub(base)
	if strings.Contains(err.Error(), "secretpw") || !errors.Is(err, base) {
		t.Fatalf("%v", err)
	}
}

func TestURLCredentialsNeverInErrors(t *testing.T) { // status, logs and call errors
	t.Parallel()
	f := newFixture(t)
	f.servers["down"] = config.MCPServer{URL: "http://user:hunter22@" + closedPort(t) + "/t/sk-path-s3cr3t/mcp?api_key=sk-live-secret", TimeoutMs: 2000}
	m := f.startReady()
	eventually(t, 5*time.Second, "a failure", func() bool { return statusOf(m, "down").LastError != "" })
	_, err := m.ListResources(t.Context(), "down")
	for _, s := range []string{statusOf(m, "down").LastError, err.Error(), strings.Join(f.log.lines(), "\n")} {
		if strings.Contains(s, "sk-live-secret") || strings.Contains(s, "hunter22") || strings.Contains(s, "sk-path-s3cr3t") {
			t.Fatalf("credential leaked: %s", s)
		}
	}
}

func TestToolsStayDuringReconnect(t *testing.T) { // MCP.<server>.<tool> stays defined and fails clearly
	t.Parallel()
	hs := httpServer(t, orderedServer(), true, nil)
	f := newFixture(t)
	f.servers["web"] = config.MCPServer{URL: hs.URL, TimeoutMs: 2000}
	m := f.startReady()
	before := len(m.Tools())
	hs.CloseClientConnections()
	hs.Close()
	plain := tool(t, m, "web", "plain")
	_, _ = call(t, plain, `{}`)
	eventually(t, 5*time.Second, "failed status", func() bool { return statusOf(m, "web").State == StateFailed })
	if n := len(m.Tools()); n != before || before == 0 {
		t.Fatalf("tools %d during the reconnect, %d before", n, before)
	}
	if _, err := call(t, tool(t, m, "web", "plain"), `{}`); err == nil || !strings.Contains(err.Error(), "MCP server web is not connected (failed; reconnecting)") {
		t.Fatalf("%v", err)
	}
}
