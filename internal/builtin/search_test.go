package builtin

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestGlob(t *testing.T) {
	tests := []struct {
		pattern string
		match   []string
		noMatch []string
	}{
		{"*.go", []string{"a.go", "x/y/b.go", ".hidden.go"}, []string{"a.go.txt", "a.txt", "go"}},
		{"src/*.go", []string{"src/a.go"}, []string{"a.go", "src/x/a.go", "x/src/a.go"}},
		{"src/**/*.go", []string{"src/a.go", "src/x/a.go", "src/x/y/z/a.go"}, []string{"a.go", "lib/a.go"}},
		{"**/test/*.txt", []string{"test/a.txt", "a/b/test/c.txt"}, []string{"test/x/a.txt", "atest/a.txt"}},
		{"**", []string{"a", "a/b/c"}, nil},
		{"a/**", []string{"a/b", "a/b/c"}, []string{"b/a"}},
		{"*.{go,md}", []string{"a.go", "d/b.md"}, []string{"c.txt"}},
		{"{cmd,internal}/**/*_test.go", []string{"cmd/x_test.go", "internal/a/b_test.go"}, []string{"pkg/x_test.go", "cmd/x.go"}},
		{"./docs/*.md", []string{"docs/a.md"}, []string{"a.md"}},
		{"[ab].txt", []string{"a.txt", "x/b.txt"}, []string{"c.txt"}},
		{"file?.txt", []string{"file1.txt"}, []string{"file10.txt"}},
		{"**/**/x", []string{"x", "a/x", "a/b/x"}, []string{"a/y"}},
	}
	for _, tc := range tests {
		g, err := compileGlob(tc.pattern)
		if err != nil {
			t.Fatalf("%s: %v", tc.pattern, err)
		}
		for _, p := range tc.match {
			if !g.match(p) {
				t.Errorf("%s should match %s", tc.pattern, p)
			}
		}
		for _, p := range tc.noMatch {
			if g.match(p) {
				t.Errorf("%s should not match %s", tc.pattern, p)
			}
		}
	}
	descend := []struct {
		pattern, dir string
		want         bool
	}{
		{"src/*.go", "src", true},
		{"src/*.go", "lib", false},
		{"src/*.go", "src/x", false},
		{"src/**/*.go", "src/x/y", true},
		{"*.go", "anything/deep", true},
		{"a/b/c", "a", true},
		{"a/b/c", "a/b", true},
		{"a/b/c", "a/b/c", false},
	}
	for _, tc := range descend {
		g, _ := compileGlob(tc.pattern)
		if got := g.descend(tc.dir); got != tc.want {
			t.Errorf("%s descend %s = %v", tc.pattern, tc.dir, got)
		}
	}
	for _, bad := range []string{"", "/abs/*.go", "../*.go", "a/../b", "[", "{a,b", strings.Repeat("{a,b}", 8)} {
		if _, err := compileGlob(bad); err == nil {
			t.Errorf("compileGlob(%q) succeeded", bad)
		}
	}
}

func TestFind(t *testing.T) {
	e := newEnv(t)
	for _, f := range []string{"a.go", "b.txt", "src/c.go", "src/deep/d.go", ".git/config.go", "node/e.go"} {
		e.write(f, "x\n")
	}
	tests := []struct {
		input map[string]any
		want  []string
		trunc bool
	}{
		{map[string]any{"pattern": "*.go"}, []string{"a.go", "node/e.go", "src/c.go", "src/deep/d.go"}, false},
		{map[string]any{"pattern": "src/*.go"}, []string{"src/c.go"}, false},
		{map[string]any{"pattern": "*.go", "path": "src"}, []string{"src/c.go", "src/deep/d.go"}, false},
		{map[string]any{"pattern": "deep/*.go", "path": "src"}, []string{"src/deep/d.go"}, false},
		{map[string]any{"pattern": "*.go", "limit": 2}, []string{"a.go", "node/e.go"}, true},
		{map[string]any{"pattern": "*.rs"}, []string{}, false},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.input), func(t *testing.T) {
			got := e.mustCall("find", tc.input)
			var m []string
			for _, v := range got["matches"].([]any) {
				m = append(m, v.(string))
			}
			if m == nil {
				m = []string{}
			}
			if !slices.Equal(m, tc.want) || got["truncated"] != tc.trunc {
				t.Errorf("matches %v truncated %v, want %v %v", m, got["truncated"], tc.want, tc.trunc)
			}
		})
	}
	if got := e.callErr("find", map[string]any{"pattern": "*", "path": "a.go"}); !strings.Contains(got, "a.go is not a directory") {
		t.Errorf("%q", got)
	}
}

func TestGrep(t *testing.T) {
	e := newEnv(t)
	e.write("a.go", "package a\n\nfunc Hello() {}\nfunc hello() {}\r\n")
	e.write("b/b.txt", "Hello there\nnothing\n")
	e.write("b/bin.dat", "Hello\x00binary")
	e.write(".git/HEAD", "Hello\n")
	e.write("crlf.txt", "x {}\r\n")
	e.write("long.txt", strings.Repeat("é", 400)+"Hello"+strings.Repeat("x", 1000)+"\n")
	tests := []struct {
		name  string
		input map[string]any
		want  []string // path:line
		trunc bool
	}{
		{"plain", map[string]any{"pattern": "Hello"}, []string{"a.go:3", "b/b.txt:1", "long.txt:1"}, false},
		{"ignoreCase", map[string]any{"pattern": "func hello", "ignoreCase": true}, []string{"a.go:3", "a.go:4"}, false},
		{"anchored", map[string]any{"pattern": "^func"}, []string{"a.go:3", "a.go:4"}, false},
		{"dollar with CRLF", map[string]any{"pattern": `\{\}$`}, []string{"a.go:3", "a.go:4", "crlf.txt:1"}, false},
		{"flags off m", map[string]any{"pattern": `(?-m)^func`}, []string{"a.go:3", "a.go:4"}, false},
		{"\\A per line", map[string]any{"pattern": `\Afunc`}, []string{"a.go:3", "a.go:4"}, false},
		{"glob", map[string]any{"pattern": "Hello", "glob": "*.txt"}, []string{"b/b.txt:1", "long.txt:1"}, false},
		{"path dir", map[string]any{"pattern": "Hello", "path": "b"}, []string{"b/b.txt:1"}, false},
		{"path file", map[string]any{"pattern": "o", "path": "b/b.txt"}, []string{"b/b.txt:1", "b/b.txt:2"}, false},
		{"limit", map[string]any{"pattern": "Hello", "limit": 1}, []string{"a.go:3"}, true},
		{"none", map[string]any{"pattern": "zzz"}, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := e.mustCall("grep", tc.input)
			var m []string
			for _, v := range got["matches"].([]any) {
				mm := v.(map[string]any)
				m = append(m, fmt.Sprintf("%s:%v", mm["path"], mm["line"]))
			}
			if !slices.Equal(m, tc.want) || got["truncated"] != tc.trunc {
				t.Errorf("matches %v truncated %v, want %v %v", m, got["truncated"], tc.want, tc.trunc)
			}
		})
	}
	got := e.mustCall("grep", map[string]any{"pattern": "Hello", "path": "long.txt"})
	text := got["matches"].([]any)[0].(map[string]any)["text"].(string)
	if len(text) > grepMaxLineText+len("…") || !strings.HasSuffix(text, "…") || strings.ContainsRune(text, '\uFFFD') {
		t.Errorf("long line text %d bytes: %q", len(text), text[len(text)-10:])
	}
	res, _ := e.call("grep", map[string]any{"pattern": "there"})
	if res.Content[0].Text != "b/b.txt:1: Hello there\n" {
		t.Errorf("text %q", res.Content[0].Text)
	}
}
