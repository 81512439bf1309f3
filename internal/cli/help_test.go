package cli

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/help/*.golden")

// Every subcommand's --help is a golden file, so a change to a flag, a default or a description
// is deliberate; -h, --help and `help CMD` print the same text to stdout and exit 0 (issue 24).
func TestHelpGolden(t *testing.T) {
	for _, cmd := range [][]string{{}, {"serve"}, {"exec"}, {"wait"}, {"agent"}, {"tools"}, {"trace"}, {"bench"}, {"bench", "search"}, {"version"}} {
		name := strings.Join(cmd, "-")
		if name == "" {
			name = "codemode"
		}
		t.Run(name, func(t *testing.T) {
			var want string
			for i, args := range [][]string{append(cmd[:len(cmd):len(cmd)], "--help"), append(cmd[:len(cmd):len(cmd)], "-h"), append([]string{"help"}, cmd...)} {
				code, out, errOut := run(t, "", args...)
				if code != exitOK || errOut != "" {
					t.Fatalf("%q: exit %d, stderr %q", args, code, errOut)
				}
				if i == 0 {
					want = out
					continue
				}
				if out != want {
					t.Errorf("%q prints other help than %q:\n%s", args, args[:len(args)-1], out)
				}
			}
			golden := filepath.Join("testdata", "help", name+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(want), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			b, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/cli -run TestHelpGolden -update)", err)
			}
			if string(b) != want {
				t.Errorf("--help differs from %s (rerun with -update if intended):\n%s", golden, want)
			}
		})
	}
}

// A usage error names the command and what is wrong on stderr, prints the usage line, points
// at --help, and exits 2; nothing goes to stdout.
func TestUsageErrorsAreConsistent(t *testing.T) {
	for _, args := range [][]string{
		{"exec"}, {"exec", "--bogus"}, {"wait"}, {"serve", "extra"}, {"tools", "x"}, {"trace"},
		{"bench", "--n", "0"}, {"bench", "search", "x"}, {"agent", "--model", "m", "hi"}, {"agent", "--nope"},
	} {
		code, out, errOut := run(t, "", args...)
		name := args[0]
		if len(args) > 1 && args[1] == "search" {
			name = "bench search"
		}
		if code != exitUsage || out != "" {
			t.Errorf("%q: exit %d, stdout %q", args, code, out)
		}
		if !strings.HasPrefix(errOut, "codemode "+name+": ") || !strings.Contains(errOut, "usage: codemode "+name+" ") ||
			!strings.Contains(errOut, "run 'codemode "+name+" --help'") {
			t.Errorf("%q: stderr is not the usage-error form:\n%s", args, errOut)
		}
	}
	if code, _, errOut := run(t, "", "frobnicate"); code != exitUsage || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Errorf("unknown command: exit %d, %q", code, errOut)
	}
}
