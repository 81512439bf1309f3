package builtin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "one\ntwo\nthree\n")
	e.write("noeol.txt", "x\ny")
	e.write("empty.txt", "")
	e.write("dir/b.txt", "b\n")
	tests := []struct {
		name  string
		input map[string]any
		want  map[string]any
	}{
		{"whole", map[string]any{"path": "a.txt"},
			map[string]any{"path": "a.txt", "content": "one\ntwo\nthree\n", "lines": 3.0, "offset": 1.0, "truncated": false, "bytes": 14.0}},
		{"offset", map[string]any{"path": "a.txt", "offset": 2},
			map[string]any{"content": "two\nthree\n", "offset": 2.0, "truncated": false}},
		{"window", map[string]any{"path": "a.txt", "offset": 2, "limit": 1},
			map[string]any{"content": "two\n", "truncated": true, "lines": 3.0}},
		{"limit to end", map[string]any{"path": "a.txt", "offset": 3, "limit": 5},
			map[string]any{"content": "three\n", "truncated": false}},
		{"no final newline", map[string]any{"path": "noeol.txt"},
			map[string]any{"content": "x\ny", "lines": 2.0, "bytes": 3.0}},
		{"empty", map[string]any{"path": "empty.txt"},
			map[string]any{"content": "", "lines": 0.0, "truncated": false}},
		{"subdir", map[string]any{"path": "dir/b.txt"},
			map[string]any{"path": "dir/b.txt", "content": "b\n"}},
		{"cleaned", map[string]any{"path": "./dir/../dir//b.txt"},
			map[string]any{"path": "dir/b.txt", "content": "b\n"}},
		{"absolute inside", map[string]any{"path": filepath.Join(e.dir, "a.txt")},
			map[string]any{"path": "a.txt", "lines": 3.0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := e.mustCall("read", tc.input)
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %#v, want %#v", k, got[k], v)
				}
			}
		})
	}
	errs := []struct{ path, want string }{
		{"missing.txt", "read: missing.txt: no such file or directory"},
		{"dir", "read: dir is a directory"},
		{"a.txt/x", "read: a.txt/x: not a directory"},
	}
	for _, tc := range errs {
		if got := e.callErr("read", map[string]any{"path": tc.path}); !strings.Contains(got, tc.want) {
			t.Errorf("read %s: %q, want %q", tc.path, got, tc.want)
		}
	}
	if got := e.callErr("read", map[string]any{"path": "a.txt", "offset": 5}); !strings.Contains(got, "offset 5 is past the end of a.txt (3 lines)") {
		t.Errorf("offset past end: %q", got)
	}
}

func TestReadTextBlock(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "one\ntwo\nthree\n")
	res, err := e.call("read", map[string]any{"path": "a.txt", "limit": 2})
	if err != nil {
		t.Fatal(err)
	}
	want := "one\ntwo\n[showing lines 1-2 of 3; continue with offset 3]"
	if res.Content[0].Text != want {
		t.Errorf("text %q, want %q", res.Content[0].Text, want)
	}
}

func TestReadLimits(t *testing.T) {
	e := newEnv(t)
	// 3 MiB of 1 KiB lines: one read returns whole lines up to 1 MiB.
	line := strings.Repeat("x", 1023) + "\n"
	e.write("big.txt", strings.Repeat(line, 3*1024))
	got := e.mustCall("read", map[string]any{"path": "big.txt"})
	content := got["content"].(string)
	if len(content) != 1<<20 || got["truncated"] != true || got["lines"] != 3072.0 || got["bytes"] != float64(3<<20) {
		t.Errorf("len %d truncated %v lines %v bytes %v", len(content), got["truncated"], got["lines"], got["bytes"])
	}
	// Paging on by offset reaches the end.
	got = e.mustCall("read", map[string]any{"path": "big.txt", "offset": 3000})
	if len(got["content"].(string)) != 73*1024 || got["truncated"] != false {
		t.Errorf("tail: len %d truncated %v", len(got["content"].(string)), got["truncated"])
	}
	// One line longer than the limit is cut on a rune boundary.
	e.write("long.txt", strings.Repeat("é", 1<<20)+"\nend\n")
	got = e.mustCall("read", map[string]any{"path": "long.txt"})
	c := got["content"].(string)
	if len(c) > 1<<20 || len(c) < 1<<20-1 || got["truncated"] != true || strings.ContainsRune(c, '\uFFFD') {
		t.Errorf("long line: len %d truncated %v", len(c), got["truncated"])
	}
	// Binary files are refused.
	e.write("bin.dat", "abc\x00def")
	if got := e.callErr("read", map[string]any{"path": "bin.dat"}); !strings.Contains(got, "bin.dat is a binary file") {
		t.Errorf("binary: %q", got)
	}
}

// escapeSetup makes a workspace with an outside directory and symlinks that lead out of it.
func escapeSetup(t *testing.T) (*env, string) {
	e := newEnv(t)
	outside := filepath.Join(filepath.Dir(e.dir), "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.write("in.txt", "inside\n")
	for name, target := range map[string]string{
		"linkfile": filepath.Join(outside, "secret.txt"),
		"linkdir":  outside,
		"reldir":   "../outside",
		"dangling": filepath.Join(outside, "new.txt"),
		"okfile":   "in.txt",
		"okdir":    ".",
	} {
		if err := os.Symlink(target, filepath.Join(e.dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return e, outside
}

func TestPathEscapes(t *testing.T) {
	e, outside := escapeSetup(t)
	escapes := []string{
		"../outside/secret.txt",
		"../ws/../outside/secret.txt",
		"a/../../outside/secret.txt",
		"..",
		filepath.Join(outside, "secret.txt"),
		"/etc/passwd",
		"linkfile",
		"linkdir/secret.txt",
		"reldir/secret.txt",
		"linkdir/new.txt",
		"linkdir/sub/new.txt",
		"dangling",
	}
	for _, p := range escapes {
		t.Run(p, func(t *testing.T) {
			checks := []struct {
				tool  string
				input map[string]any
			}{
				{"read", map[string]any{"path": p}},
				{"write", map[string]any{"path": p, "content": "pwned", "createDirs": true}},
				{"edit", map[string]any{"path": p, "oldText": "secret", "newText": "pwned"}},
				{"ls", map[string]any{"path": p}},
				{"find", map[string]any{"pattern": "*", "path": p}},
				{"grep", map[string]any{"pattern": "secret", "path": p}},
				{"exec", map[string]any{"command": "pwd", "cwd": p}},
			}
			for _, c := range checks {
				got := e.callErr(c.tool, c.input)
				if !strings.Contains(got, "outside the workspace") && !strings.Contains(got, "symlink whose target does not exist") {
					t.Errorf("%s %s: %q does not explain the refusal", c.tool, p, got)
				}
				if strings.Contains(got, outside) && filepath.IsAbs(p) == false {
					t.Errorf("%s %s: error leaks the host path: %q", c.tool, p, got)
				}
			}
			patch := fmt.Sprintf("--- a/%s\n+++ b/%s\n@@ -1 +1 @@\n-secret\n+pwned\n", p, p)
			if got := e.callErr("apply_patch", map[string]any{"patch": patch}); !strings.Contains(got, "outside the workspace") && !strings.Contains(got, "symlink whose target") {
				t.Errorf("apply_patch %s: %q", p, got)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != "secret\n" {
		t.Fatalf("the outside file changed: %q", b)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Fatalf("files were created outside: %v", entries)
	}
	// Symlinks that stay inside work, and reads through them report the caller's path.
	if got := e.mustCall("read", map[string]any{"path": "okfile"}); got["content"] != "inside\n" || got["path"] != "okfile" {
		t.Errorf("okfile: %v", got)
	}
	if got := e.mustCall("read", map[string]any{"path": "okdir/in.txt"}); got["content"] != "inside\n" {
		t.Errorf("okdir: %v", got)
	}
	// Writing through an inside symlink replaces the target's content, not the link.
	e.mustCall("write", map[string]any{"path": "okfile", "content": "changed\n"})
	if fi, err := os.Lstat(filepath.Join(e.dir, "okfile")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("okfile is no longer a symlink")
	}
	if got := e.read("in.txt"); got != "changed\n" {
		t.Errorf("in.txt = %q", got)
	}
	// find and grep do not follow symlinks out of the workspace while walking.
	got := e.mustCall("grep", map[string]any{"pattern": "secret"})
	if m := got["matches"].([]any); len(m) != 0 {
		t.Errorf("grep found %v", m)
	}
	got = e.mustCall("find", map[string]any{"pattern": "**/secret.txt"})
	if m := got["matches"].([]any); len(m) != 0 {
		t.Errorf("find found %v", m)
	}
}

func TestWorkspaceThroughSymlink(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	e := newEnvConfig(t, testConfig(link))
	e.write("a.txt", "a\n")
	for _, p := range []string{"a.txt", filepath.Join(link, "a.txt"), filepath.Join(real, "a.txt")} {
		if got := e.mustCall("read", map[string]any{"path": p}); got["path"] != "a.txt" {
			t.Errorf("%s: path %v", p, got["path"])
		}
	}
}

func TestWrite(t *testing.T) {
	e := newEnv(t)
	got := e.mustCall("write", map[string]any{"path": "new.txt", "content": "hello\n"})
	if got["created"] != true || got["bytes"] != 6.0 || got["path"] != "new.txt" || e.read("new.txt") != "hello\n" {
		t.Errorf("create: %v", got)
	}
	if err := os.Chmod(filepath.Join(e.dir, "new.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	got = e.mustCall("write", map[string]any{"path": "new.txt", "content": ""})
	if got["created"] != false || got["bytes"] != 0.0 || e.read("new.txt") != "" {
		t.Errorf("overwrite: %v", got)
	}
	if fi, _ := os.Stat(filepath.Join(e.dir, "new.txt")); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v not kept", fi.Mode())
	}
	if got := e.callErr("write", map[string]any{"path": "a/b/c.txt", "content": "x"}); !strings.Contains(got, "parent directory of a/b/c.txt does not exist (set createDirs") {
		t.Errorf("missing parent: %q", got)
	}
	e.mustCall("write", map[string]any{"path": "a/b/c.txt", "content": "x", "createDirs": true})
	if e.read("a/b/c.txt") != "x" {
		t.Error("createDirs")
	}
	if got := e.callErr("write", map[string]any{"path": "a", "content": "x"}); !strings.Contains(got, "a is a directory") {
		t.Errorf("dir: %q", got)
	}
	if got := e.callErr("write", map[string]any{"path": ".", "content": "x"}); !strings.Contains(got, "workspace directory itself") {
		t.Errorf("root: %q", got)
	}
	if got := e.callErr("write", map[string]any{"path": "big", "content": strings.Repeat("x", maxFileBytes+1)}); !strings.Contains(got, "limit") {
		t.Errorf("size: %q", got)
	}
	// No temporary files are left behind.
	entries, _ := os.ReadDir(e.dir)
	for _, en := range entries {
		if strings.Contains(en.Name(), ".tmp-") {
			t.Errorf("leftover %s", en.Name())
		}
	}
}

func TestEdit(t *testing.T) {
	e := newEnv(t)
	e.write("a.go", "package a\n\nfunc A() int {\n\treturn 1\n}\n\nfunc B() int {\n\treturn 1\n}\n")
	got := e.mustCall("edit", map[string]any{"path": "a.go", "oldText": "func A() int {\n\treturn 1", "newText": "func A() int {\n\treturn 2"})
	wantDiff := "--- a/a.go\n+++ b/a.go\n@@ -1,7 +1,7 @@\n package a\n \n func A() int {\n-\treturn 1\n+\treturn 2\n }\n \n func B() int {\n"
	if got["replacements"] != 1.0 || got["diff"] != wantDiff {
		t.Errorf("edit: %v\n%s", got, got["diff"])
	}
	e.write("b.txt", "x\nx\nx\n")
	if got := e.callErr("edit", map[string]any{"path": "b.txt", "oldText": "x", "newText": "y"}); !strings.Contains(got, "oldText occurs 3 times in b.txt (at lines 1, 2, 3)") {
		t.Errorf("ambiguous: %q", got)
	}
	got = e.mustCall("edit", map[string]any{"path": "b.txt", "oldText": "x", "newText": "y", "replaceAll": true})
	if got["replacements"] != 3.0 || e.read("b.txt") != "y\ny\ny\n" {
		t.Errorf("replaceAll: %v", got)
	}
	if got := e.callErr("edit", map[string]any{"path": "b.txt", "oldText": "zzz", "newText": "y"}); !strings.Contains(got, "oldText was not found in b.txt") {
		t.Errorf("not found: %q", got)
	}
	// A CRLF file accepts LF text and keeps its line endings.
	e.write("crlf.txt", "a\r\nb\r\nc\r\n")
	e.mustCall("edit", map[string]any{"path": "crlf.txt", "oldText": "a\nb", "newText": "a\nB\nb"})
	if got := e.read("crlf.txt"); got != "a\r\nB\r\nb\r\nc\r\n" {
		t.Errorf("crlf: %q", got)
	}
	// The diff of a huge change is bounded.
	e.write("big.txt", strings.Repeat("line\n", 100000))
	got = e.mustCall("edit", map[string]any{"path": "big.txt", "oldText": "line", "newText": "LINE", "replaceAll": true})
	if d := got["diff"].(string); len(d) > maxDiffBytes+64 || !strings.HasSuffix(d, "(diff truncated)\n") {
		t.Errorf("diff %d bytes", len(d))
	}
}

func TestLs(t *testing.T) {
	e := newEnv(t)
	e.write("b.txt", "12345")
	e.write("a/x", "")
	e.write(".hidden", "")
	if err := os.Symlink("b.txt", filepath.Join(e.dir, "l")); err != nil {
		t.Fatal(err)
	}
	got := e.mustCall("ls", map[string]any{})
	want := `[{"name":"a","size":0,"type":"dir"},{"name":"b.txt","size":5,"type":"file"},{"name":"l","size":0,"type":"symlink"}]`
	if s := jsonString(t, got["entries"]); s != want || got["path"] != "." || got["truncated"] != false {
		t.Errorf("ls: %s %v", s, got)
	}
	got = e.mustCall("ls", map[string]any{"all": true})
	if n := len(got["entries"].([]any)); n != 4 {
		t.Errorf("all: %d entries", n)
	}
	got = e.mustCall("ls", map[string]any{"path": "a"})
	if s := jsonString(t, got["entries"]); s != `[{"name":"x","size":0,"type":"file"}]` || got["path"] != "a" {
		t.Errorf("ls a: %s", s)
	}
	if got := e.callErr("ls", map[string]any{"path": "b.txt"}); !strings.Contains(got, "b.txt is not a directory") {
		t.Errorf("file: %q", got)
	}
	res, _ := e.call("ls", map[string]any{})
	if res.Content[0].Text != "a/\nb.txt  5\nl@\n" {
		t.Errorf("text %q", res.Content[0].Text)
	}
	// Large directories are cut.
	for i := range lsMaxEntries + 5 {
		e.write(fmt.Sprintf("many/f%04d", i), "")
	}
	got = e.mustCall("ls", map[string]any{"path": "many"})
	if n := len(got["entries"].([]any)); n != lsMaxEntries || got["truncated"] != true {
		t.Errorf("many: %d entries, truncated %v", n, got["truncated"])
	}
}
