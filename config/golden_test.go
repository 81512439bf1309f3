package config

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/errors/*.golden from the current output")

// TestErrorGolden pins the exact text users see for each invalid file in testdata/errors
// (C2, C3): positions, paths, wording and order. Run `go test -run TestErrorGolden -update` after
// an intended change and review the diff.
func TestErrorGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "errors", "*.json5"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no inputs: %v", err)
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".json5")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := Parse(data, filepath.Base(in))
			if err == nil {
				t.Fatalf("%s parsed without error: %+v", in, cfg)
			}
			got := err.Error() + "\n"
			golden := strings.TrimSuffix(in, ".json5") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("%s: error text changed (run with -update if intended)\n--- got\n%s--- want\n%s", in, got, want)
			}
		})
	}

	// A golden file without an input is stale.
	goldens, _ := filepath.Glob(filepath.Join("testdata", "errors", "*.golden"))
	for _, g := range goldens {
		if _, err := os.Stat(strings.TrimSuffix(g, ".golden") + ".json5"); err != nil {
			t.Errorf("%s has no input file", g)
		}
	}
}
