package catalog

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func suggestCatalog() *Catalog {
	native := func(name, owner, desc string) *api.Tool {
		if owner == "" {
			owner = api.CoreOwner // the gateway's built-in tools
		}
		return &api.Tool{Name: name, Owner: owner, Description: desc}
	}
	mcp := func(server, name, desc string) *api.Tool {
		return &api.Tool{Name: name, Source: api.SourceMCP, Owner: server, Description: desc}
	}
	return Build([]*api.Tool{
		native("read", "", "Read a file from the workspace."),
		native("write", "", "Write a file."),
		native("web_fetch", "", "Fetch a URL over HTTP."),
		native("list-items", "shop", "List the items in the shop."),
		native("list_items", "", "List items (core)."), // collides with shop's list-items: no safe name
		native("search", "", "A tool named like a helper."),
		{Name: "select_file", Source: api.SourceClient, Owner: "app", Description: "Ask the user to pick a file."},
		mcp("everything", "get-sum", "Adds two numbers and returns their sum."),
		mcp("everything", "echo", "Echoes the input back."),
		mcp("everything", "getTinyImage", "Returns a tiny image."),
		mcp("chrome-devtools", "take_screenshot", "Take a screenshot of the page."),
		mcp("memory", "create_entities", "Create entities in the knowledge graph."),
		mcp("memory", "delete_entities", "Delete entities from the knowledge graph."),
	})
}

// TestUnknownNames is issue 14 item 4: a name that does not exist says so and suggests the
// nearest names (edit distance, then the search index). The messages are golden.
func TestUnknownNames(t *testing.T) {
	c := suggestCatalog()
	cases := []struct {
		name string
		msg  string
		want []string // substrings the message must contain (beyond the golden file)
	}{
		{"tools: typo", c.UnknownGuestName("reed"), []string{"did you mean tools.read?"}},
		{"tools: other spelling", c.UnknownGuestName("webFetch"), []string{"did you mean tools.web_fetch?"}},
		{"tools: ambiguous safe name", c.UnknownGuestName("list_items"), []string{`"native:core:list_items"`, `"native:shop:list-items"`, "tools.callValue(id, input)"}},
		{"tools: helper-named tool", c.UnknownGuestName("search_"), nil},
		{"tools: MCP tool", c.UnknownGuestName("get_sum"), []string{"MCP.everything.getSum({...})"}},
		{"tools: control tool", c.UnknownGuestName("wait"), []string{"control tool"}},
		{"tools: search fallback", c.UnknownGuestName("download"), []string{"searching for"}},
		{"tools: nothing close", c.UnknownGuestName("zzzz"), []string{"tools.search(query)"}},
		{"tools: not an identifier", c.UnknownGuestName("a b"), []string{`tools["a b"]`}},
		{"tools: huge name", c.UnknownGuestName(strings.Repeat("x", 5000)), nil},
		{"MCP: server typo", c.UnknownServer("everythin"), []string{"did you mean MCP.everything?"}},
		{"MCP: server by its real name", c.UnknownServer("chrome-devtools"), []string{"MCP.chromeDevtools"}},
		{"MCP: tool used as a server", c.UnknownServer("getSum"), []string{"MCP.everything.getSum"}},
		{"MCP: nothing close", c.UnknownServer("github"), []string{"the servers are MCP.everything, MCP.chromeDevtools, MCP.memory"}},
		{"MCP: tool by its real name", c.UnknownMCPTool("everything", "get_sum"), []string{"did you mean MCP.everything.getSum?"}},
		{"MCP: the same name wins", c.UnknownMCPTool("memory", "create_entities"), []string{"did you mean MCP.memory.createEntities?"}},
		{"MCP: tool typo", c.UnknownMCPTool("everything", "ecko"), []string{"MCP.everything.echo"}},
		{"MCP: tool on another server", c.UnknownMCPTool("memory", "echo"), []string{"MCP.everything.echo"}},
		{"MCP: search fallback", c.UnknownMCPTool("everything", "add"), []string{"searching for \"add\" finds MCP.everything.getSum"}},
		{"MCP: unknown server", c.UnknownMCPTool("nope", "x"), []string{"there is no MCP server"}},
		{"id: typo", c.UnknownID("native:core:reed"), []string{`did you mean "native:core:read"?`}},
		{"id: bare name", c.UnknownID("web_fetch"), []string{`"native:core:web_fetch"`}},
		{"id: client tool", c.UnknownID("select-file"), []string{`"client:app:select_file"`}},
		{"id: MCP tool", c.UnknownID("mcp:everything:get_sum"), []string{"MCP.everything.getSum({...})"}},
		{"id: nothing close", c.UnknownID("qqqq"), nil},
	}
	var golden strings.Builder
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, w := range tc.want {
				if !strings.Contains(tc.msg, w) {
					t.Errorf("message lacks %q:\n%s", w, tc.msg)
				}
			}
			if len(tc.msg) > 1200 {
				t.Errorf("message is %d bytes", len(tc.msg))
			}
		})
		fmt.Fprintf(&golden, "## %s\n%s\n\n", tc.name, tc.msg)
	}
	checkGolden(t, "testdata/unknown-names.golden", golden.String())
}

func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs (run with -update to accept):\n%s", path, got)
	}
}

func TestNearest(t *testing.T) {
	cands := []candidate{
		{keys: []string{"getSum", "get-sum"}, show: "getSum"},
		{keys: []string{"getTinyImage"}, show: "getTinyImage"},
		{keys: []string{"echo"}, show: "echo"},
	}
	tests := []struct {
		got  string
		want string
	}{
		{"get_sum", "getSum"}, // same name, other separators: the only answer
		{"GETSUM", "getSum"},
		{"getsun", "getSum"},
		{"tinyimage", "getTinyImage"}, // contained
		{"ech", "echo"},
		{"", ""},
		{"zzzzzzz", ""},
		{strings.Repeat("a", 200), ""},
	}
	for _, tt := range tests {
		t.Run(tt.got, func(t *testing.T) {
			if got := strings.Join(nearest(tt.got, cands, 3), ","); got != tt.want {
				t.Fatalf("nearest(%q) = %q, want %q", tt.got, got, tt.want)
			}
		})
	}
}

// TestUnknownNamesBounded: a hostile name costs bounded work on the VM goroutine, however large
// the catalog or the name.
func TestUnknownNamesBounded(t *testing.T) {
	var tools []*api.Tool
	for i := range 2000 {
		tools = append(tools, &api.Tool{Name: fmt.Sprintf("tool_%d_%s", i, strings.Repeat("x", i%60)), Description: "A tool."})
		tools = append(tools, &api.Tool{Name: fmt.Sprintf("t%d", i), Source: api.SourceMCP, Owner: fmt.Sprintf("s%d", i%50)})
	}
	c := Build(tools)
	huge := strings.Repeat("tool_1_", 1<<20/7)
	start := time.Now()
	for _, msg := range []string{c.UnknownGuestName(huge), c.UnknownID(huge), c.UnknownServer(huge), c.UnknownMCPTool("s1", huge),
		c.UnknownGuestName(strings.Repeat("y", 100)), c.UnknownID("tool_" + strings.Repeat("x", 100))} {
		if len(msg) > 1200 {
			t.Fatalf("message is %d bytes", len(msg))
		}
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("took %v", took)
	}
}

// TestInputSchemaHammer: entries are shared by concurrent runs; the lazily compiled input schema
// is compiled once and used from many goroutines.
func TestInputSchemaHammer(t *testing.T) {
	c := Build([]*api.Tool{{Name: "t", InputSchema: []byte(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)},
		{Name: "bad", Source: api.SourceMCP, Owner: "s", InputSchema: []byte(`{"type":42}`)}})
	e, bad := c.Lookup("native:app:t"), c.Lookup("mcp:s:bad")
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if bad.InputSchema() != nil {
				errs <- fmt.Errorf("an invalid untrusted schema compiled")
			}
			s := e.InputSchema()
			if s == nil {
				errs <- fmt.Errorf("no schema")
				return
			}
			if err := s.ValidateInput([]byte(fmt.Sprintf(`{"n":%d}`, i))); err != nil {
				errs <- err
			}
			if err := s.ValidateInput([]byte(`{"n":"x"}`)); err == nil {
				errs <- fmt.Errorf("a string passed as an integer")
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
