package config

import (
	"fmt"
	"strings"
	"testing"
)

func TestIndexPositions(t *testing.T) {
	tests := []struct {
		src  string
		path path
		text string // source text of the value
	}{
		{`{a: 1}`, path{"a"}, "1"},
		{`{"a b": [1, 'x']}`, path{`["a b"]`, "[1]"}, "'x'"},
		{`{'q\'': {r: -0x1F}}`, path{`["q'"]`, "r"}, "-0x1F"},
		{`{"\u0061": true}`, path{"a"}, "true"},
		{"{a: // c\r b}", nil, "{a: // c\r b}"}, // a lone CR ends a line comment
		{"{a: // c\r 5}", path{"a"}, "5"},
		// json5 ends a block comment at the first '/' after its first '*'.
		{`{a: /* x * y / 7, b: 8}`, path{"a"}, "7"},
		{`{a: /**/ [ /* */ ], b: "s\"}"}`, path{"b"}, `"s\"}"`},
		{`{a: {}, a: {b: 2}}`, path{"a", "b"}, "2"},
	}
	for _, tt := range tests {
		idx := buildIndex([]byte(tt.src))
		s, ok := idx.spans[tt.path.String()]
		if !ok || s.end < 0 {
			t.Errorf("%q: %q not indexed", tt.src, tt.path)
			continue
		}
		if got := tt.src[s.value:s.end]; got != tt.text {
			t.Errorf("%q: %q at %q, want %q", tt.src, tt.path, got, tt.text)
		}
	}
}

func TestDeepNesting(t *testing.T) {
	// json5 recurses once per level: a file nested beyond maxFileDepth is refused before it
	// runs, at the bracket that crosses the bound (issue 18 item 1).
	const n = 100000
	src := "{tools: " + strings.Repeat("[", n) + strings.Repeat("]", n) + "}"
	want := fmt.Sprintf("test.json5:1:%d: the file nests objects and arrays deeper than %d levels", 9+maxFileDepth-1, maxFileDepth)
	if got := parseErr(t, src); got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	// Brackets in strings and comments do not count.
	ok := "{workspace: '" + strings.Repeat("[", n) + "' /* " + strings.Repeat("{", n) + " */, tools: " +
		strings.Repeat("[", maxFileDepth-1) + strings.Repeat("]", maxFileDepth-1) + "}"
	if got := parseErr(t, ok); !strings.Contains(got, "tools: expected an object, got an array") {
		t.Errorf("got %s", got)
	}
	src = "{a: " + strings.Repeat("{a: ", n) + "1" + strings.Repeat("}", n) + ", tools: 1}"
	// The index skips, rather than gives up on, values nested too deeply to record.
	idx := buildIndex([]byte(src))
	if s := idx.spans["tools"]; s.end != len(src)-1 {
		t.Errorf("tools span = %+v after a deep value", s)
	}
}

func TestLineCol(t *testing.T) {
	data := []byte("ab\ncé\r\nx\n")
	for off, want := range map[int][2]int{0: {1, 1}, 2: {1, 3}, 3: {2, 1}, 4: {2, 2}, 6: {2, 3}, 8: {3, 1}, 10: {4, 1}, 99: {4, 1}} {
		if l, c := lineCol(data, off); l != want[0] || c != want[1] {
			t.Errorf("lineCol(%d) = %d:%d, want %d:%d", off, l, c, want[0], want[1])
		}
	}
	if l, c := lineCol(data, -1); l != 0 || c != 0 {
		t.Errorf("lineCol(-1) = %d:%d, want 0:0", l, c)
	}
}
