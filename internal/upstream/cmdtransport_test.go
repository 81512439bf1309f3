package upstream

import (
	"bufio"
	"io"
	"strings"
	"testing"
)

func TestUpstreamFilter(t *testing.T) {
	big := `{"jsonrpc":"2.0","id":7,"result":{"x":"` + strings.Repeat("a", 31000) + `"}}`
	deep := `{"jsonrpc":"2.0","id":"d","result":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`
	deepOK := `{"jsonrpc":"2.0","id":"e","result":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}`
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		"npm WARN something on stdout",
		big,
		deep,
		deepOK,
		`{"jsonrpc":"2.0","method":"notifications/x"}`,
		`{"jsonrpc":"2.0","method":"x","params":{"s":"` + strings.Repeat("b", 31000) + `"}}`, // too big, no id: dropped
	}, "\n")
	f := &upstreamFilter{br: bufio.NewReaderSize(strings.NewReader(in), 16), max: 30000}
	out, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"jsonrpc":"2.0","id":1,"result":{}}
{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"the server sent a message over the 30000-byte limit"}}
{"jsonrpc":"2.0","id":"d","error":{"code":-32603,"message":"the server sent a message nested deeper than 10000 levels"}}
` + deepOK + `
{"jsonrpc":"2.0","method":"notifications/x"}
`
	if string(out) != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
}

func TestStdioBadResultFailsOnlyThatCall(t *testing.T) { // the connection survives for everyone else
	t.Parallel()
	f := newFixture(t)
	f.servers["helper"] = helperConfig(t, nil)
	m := f.startReady()
	pid := func() string {
		res, err := call(t, tool(t, m, "helper", "pid"), `{}`)
		if err != nil {
			t.Fatal(err)
		}
		return res.Content[0].Text
	}
	before := pid()
	for _, name := range []string{"oversized", "deep"} {
		if _, err := call(t, tool(t, m, "helper", name), `{}`); err == nil || !strings.Contains(err.Error(), "MCP server helper") {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if after := pid(); after != before || statusOf(m, "helper").Restarts != 0 {
		t.Fatalf("the server was restarted: pid %s → %s, %+v", before, after, statusOf(m, "helper"))
	}
}
