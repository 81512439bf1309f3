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
	f.servers["down"] = config.MCPServer{URL: "http://user:hunter22@" + closedPort(t) + "/mcp?api_key=sk-live-secret", TimeoutMs: 2000}
	m := f.startReady()
	eventually(t, 5*time.Second, "a failure", func() bool { return statusOf(m, "down").LastError != "" })
	_, err := m.ListResources(t.Context(), "down")
	for _, s := range []string{statusOf(m, "down").LastError, err.Error(), strings.Join(f.log.lines(), "\n")} {
		if strings.Contains(s, "sk-live-secret") || strings.Contains(s, "hunter22") {
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
