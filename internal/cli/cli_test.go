package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func lines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %q", l)
		}
		out = append(out, m)
	}
	return out
}

func TestExecCommand(t *testing.T) {
	dir := t.TempDir()
	ts := filepath.Join(dir, "cell.ts")
	os.WriteFile(ts, []byte("const n: number = 41; return n + 1"), 0o644)
	js := filepath.Join(dir, "cell.js")
	os.WriteFile(js, []byte("return 'from file'"), 0o644)
	badCfg := filepath.Join(dir, "bad.json5")
	os.WriteFile(badCfg, []byte("{tools: {codeMode: {enabled: true, timeoutMs: 70000}}}"), 0o644)
	offCfg := filepath.Join(dir, "off.json5")
	os.WriteFile(offCfg, []byte("{tools: {codeMode: false}}"), 0o644)

	cases := []struct {
		name     string
		stdin    string
		args     []string
		exit     int
		statuses []string
		stderr   string
	}{
		{"code", "", []string{"exec", "--code", "return 1+1"}, 0, []string{"completed"}, ""},
		{"typescript by extension", "", []string{"exec", ts}, 0, []string{"completed"}, ""},
		{"javascript file, flags after", "", []string{"exec", js, "--language", "javascript"}, 0, []string{"completed"}, ""},
		{"stdin", "return [1,2,3].length", []string{"exec", "-"}, 0, []string{"completed"}, ""},
		{"failed cell", "", []string{"exec", "--code", "throw new Error('x')"}, 1, []string{"failed"}, ""},
		{"invalid input is a failed result", "", []string{"exec", "--code", "require('fs')"}, 1, []string{"failed"}, ""},
		{"waits until terminal", "", []string{"exec", "--code", "await yield_control('a'); await yield_control('b'); return 3"}, 0, []string{"waiting", "waiting", "completed"}, ""},
		{"no-wait", "", []string{"exec", "--no-wait", "--code", "await yield_control(); return 3"}, 0, []string{"waiting"}, ""},
		{"no code", "", []string{"exec"}, 2, nil, "usage"},
		{"code and file", "", []string{"exec", "--code", "1", js}, 2, nil, "not both"},
		{"two files", "", []string{"exec", js, ts}, 2, nil, "one FILE"},
		{"bad language", "", []string{"exec", "--language", "python", "--code", "1"}, 2, nil, "javascript or typescript"},
		{"missing file", "", []string{"exec", filepath.Join(dir, "nope.js")}, 2, nil, "no such file"},
		{"config out of range", "", []string{"exec", "--config", badCfg, "--code", "1"}, 2, nil, "timeoutMs: 70000 is out of range"},
		{"code mode off", "", []string{"exec", "--config", offCfg, "--code", "1"}, 2, nil, "disabled"},
		{"unknown flag", "", []string{"exec", "--bogus"}, 2, nil, "bogus"},
		{"unknown command", "", []string{"frobnicate"}, 2, nil, "unknown command"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := run(t, c.stdin, c.args...)
			if code != c.exit {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", code, c.exit, out, errs)
			}
			if c.stderr != "" && !strings.Contains(errs, c.stderr) {
				t.Fatalf("stderr %q lacks %q", errs, c.stderr)
			}
			if c.statuses == nil {
				if out != "" {
					t.Fatalf("unexpected stdout %q", out)
				}
				return
			}
			var got []string
			for _, l := range lines(t, out) {
				got = append(got, l["status"].(string))
				if _, ok := l["telemetry"]; !ok {
					t.Fatalf("result without telemetry: %v", l)
				}
			}
			if strings.Join(got, ",") != strings.Join(c.statuses, ",") {
				t.Fatalf("statuses %v, want %v", got, c.statuses)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := run(t, "", "version")
	if code != 0 || !strings.Contains(out, "codemode ") || !strings.Contains(out, "quickjs-wasi@3.7.0") {
		t.Fatalf("%d %q", code, out)
	}
}

func TestToolsCommand(t *testing.T) {
	code, out, errs := run(t, "", "tools")
	if code != 0 {
		t.Fatalf("%d %s", code, errs)
	}
	var tools []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if err := json.Unmarshal([]byte(out), &tools); err != nil {
		t.Fatal(err)
	}
	if len(tools) < 2 || tools[0].Name != "exec" || tools[1].Name != "wait" || tools[0].Description == "" || len(tools[0].InputSchema) == 0 {
		t.Fatalf("%s", out)
	}
}

func TestBenchJSON(t *testing.T) {
	code, out, errs := run(t, "", "bench", "--json", "-n", "2", "--only", "trivial exec (return")
	if code != 0 {
		t.Fatalf("%d %s", code, errs)
	}
	var res []benchResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res) != 1 || res[0].Unit != "ms" || res[0].N != 2 || res[0].Min > res[0].Median || res[0].Median > res[0].Max {
		t.Fatalf("%v %s", err, out)
	}
}
