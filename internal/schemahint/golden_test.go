package schemahint

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// checkGolden compares got with the golden file at path (or rewrites it
// with -update) and reports the first differing line.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < max(len(gl), len(wl)); i++ {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			t.Errorf("%s differs at line %d (run go test -update if intended)\n got: %s\nwant: %s", path, i+1, g, w)
			return
		}
	}
}

const (
	goldenHintLen  = DefaultHintLen
	goldenShortLen = 80
)

// TestHintsGolden renders InputHint (at the default and at a short length)
// and OutputHint for every tool of the real catalog.
func TestHintsGolden(t *testing.T) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# InputHint(%d), InputHint(%d) and OutputHint(%d) for every tool of testdata/catalog.json.\n",
		goldenHintLen, goldenShortLen, goldenHintLen)
	b.WriteString("# `out: ?` means no complete output hint (absent, open or too large).\n")
	complete := 0
	for _, s := range catalogServers(t) {
		for _, tool := range s.Tools {
			in := InputHint(tool.Input, goldenHintLen)
			short := InputHint(tool.Input, goldenShortLen)
			if len(in) > goldenHintLen || len(short) > goldenShortLen {
				t.Errorf("%s/%s: hint over its bound", s.Name, tool.Name)
			}
			out := "?"
			if tool.Output != nil {
				if h, ok := OutputHint(tool.Output, goldenHintLen); ok {
					out = h
					complete++
				}
			}
			fmt.Fprintf(&b, "\n%s/%s\n  in:    %s\n  in/%d: %s\n  out:   %s\n", s.Name, tool.Name, in, goldenShortLen, short, out)
		}
	}
	fmt.Fprintf(&b, "\n# %d complete output hints.\n", complete)
	checkGolden(t, "testdata/hints.golden", b.Bytes())
}

var goldenServers = []string{"filesystem", "everything", "github", "memory", "linear", "notion"}

func TestDTSGolden(t *testing.T) {
	servers := catalogServers(t)
	for _, name := range goldenServers {
		t.Run(name, func(t *testing.T) {
			src := RenderServerDTS(serverByName(t, name), DTSOptions{})
			checkGolden(t, "testdata/dts/"+name+".d.ts.golden", []byte(src))
		})
	}
	t.Run("index", func(t *testing.T) {
		checkGolden(t, "testdata/dts/index.d.ts.golden", []byte(RenderIndexDTS(servers, DTSOptions{})))
	})
}
