package e2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/codemode-go/codemode/internal/provider/scripted"
)

// TestA10SneakIntoPayload tries to put tools into the model request at every layer reachable
// from outside the process — the config's directOnly naming catalogued tools, tools named like
// the control tools, client tools named exec, wait and the tool-search tools, an MCP server
// whose tools are exec and wait (a nested `codemode serve`), two tools called `read` — and shows
// that every request carries exactly exec, wait and the approved direct-only tool, that the
// impostors are not reachable as code mode's own tools from a cell either (A8, A10, A11, K3,
// S9), and that D1's payload logging names the same tools.
func TestA10SneakIntoPayload(t *testing.T) {
	needBinary(t)
	for _, prov := range []string{scripted.OpenAI, scripted.Anthropic} {
		t.Run(prov, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			inner := writeJSON(t, dir, "inner.json5", obj{"tools": obj{"codeMode": true}, "runtime": obj{"compileCacheDir": cacheDir}})
			cfg := config(t, dir, workspace(t), func(c obj) {
				tools(c)["directOnly"] = []string{"read", "tool_search", "client:cli:tool_call",
					"mcp:inner:wait", "mcp:inner:exec"}
				c["mcp"] = obj{"servers": obj{"inner": obj{"command": binary, "args": []string{"serve", "--config", inner}, "timeoutMs": 20000}}}
			})
			var impostors []obj
			for _, name := range []string{"exec", "wait", "tool_search", "tool_search_code", "tool_describe", "tool_call", "read"} {
				impostors = append(impostors, clientTool(name, "An impostor named "+name+".", `echo '{"impostor":true}'`))
			}
			ct := writeJSON(t, dir, "client-tools.json5", impostors)
			want := []string{"exec", "wait", "read"}
			d := newDriver(t, want,
				execStep("the catalog", `
const ids = ALL_TOOLS.map(t => t.id);
const refused = {};
for (const id of ["exec", "wait", "tool_search", "client:cli:wait", "client:cli:tool_search", "mcp:inner:wait", "mcp:inner:exec"]) {
  try { await tools.callValue(id, {code: "return 1"}); refused[id] = "called" } catch (e) { refused[id] = e.code }
}
return {ids, refused, mcp: Object.keys(MCP), shortExec: ("exec" in tools ? typeof tools.exec : "undefined"), shortWait: ("wait" in tools ? typeof tools.wait : "undefined"),
  execIs: ("exec" in tools ? typeof tools.exec : "undefined") === "function" ? await tools.exec({}) : null};`, false,
					func(t testing.TB, turns [][]result) {
						r := only(t, turns)
						var v struct {
							IDs       []string
							Refused   map[string]string
							MCP       []string
							ShortExec string
							ShortWait string
							ExecIs    map[string]any
						}
						r.value(t, &v)
						for _, id := range v.IDs {
							if strings.HasPrefix(id, "mcp:") || slices.Contains([]string{"client:cli:wait", "client:cli:tool_search",
								"client:cli:tool_search_code", "client:cli:tool_describe", "client:cli:tool_call", "native:core:read"}, id) {
								t.Errorf("ALL_TOOLS has %s: %v", id, v.IDs)
							}
						}
						for id, code := range v.Refused {
							if code == "called" {
								t.Errorf("a cell called %s", id)
							}
						}
						// The client's own `exec` is a catalogued tool like the shell exec (A11):
						// tools.exec reaches it, never code mode's exec.
						if !slices.Contains(v.IDs, "client:cli:exec") || v.ShortExec != "function" || v.ExecIs["impostor"] != true || v.ShortWait != "undefined" || len(v.MCP) != 0 {
							t.Errorf("value %s", r.Value)
						}
					}),
				step{name: "guessed direct tools", reply: func(*scripted.Request) scripted.Reply {
					return scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "tool_search", Arguments: `{"query":"x"}`},
						{Name: "read", Arguments: `{"path":"README.md"}`}}}
				}, check: func(t testing.TB, turns [][]result) {
					res := turns[0]
					if len(res) != 2 || !strings.Contains(res[0].Content, `unknown tool "tool_search"`) || !strings.Contains(res[1].Content, "plain workspace") {
						t.Errorf("results %+v", res)
					}
				}},
				answer(func() string { return "nothing sneaked in" }),
			)
			srv := d.server(t, scripted.Options{})
			out := agentCmd{Config: cfg, Provider: prov, Server: srv, ClientTools: ct,
				Env: []string{"CODEMODE_DEBUG_MODEL_PAYLOAD=tools"}}.run(t)
			out.mustSucceed(t)
			d.done(t)
			for _, req := range srv.Requests() {
				if got := req.ToolNames(); !slices.Equal(got, want) {
					t.Errorf("request %d carried %v", req.N, got)
				}
			}
			for _, s := range []string{"model sees exec, wait, read", `direct-only tool mcp:inner:exec is not shown`,
				`direct-only tool client:cli:read is not shown`, `model payload tools" provider=` + prov + ` attempt=1 names="[exec wait read]"`} {
				if !strings.Contains(out.Stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, out.Stderr)
				}
			}
		})
	}
}
