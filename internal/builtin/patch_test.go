package builtin

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// formatPatch renders parsed file sections back as a unified diff (the inverse of parsePatch
// for what it accepts).
func formatPatch(files []*filePatch) string {
	var b strings.Builder
	for _, f := range files {
		oldName, newName := "/dev/null", "/dev/null"
		if f.OldPath != "" {
			oldName = quoteName("a/" + f.OldPath)
		}
		if f.NewPath != "" {
			newName = quoteName("b/" + f.NewPath)
		}
		if len(f.Hunks) == 0 {
			// A git section for an empty file.
			fmt.Fprintf(&b, "diff --git %s %s\n", quoteName("a/"+f.Path()), quoteName("b/"+f.Path()))
			if f.OldPath == "" {
				b.WriteString("new file mode 100644\n")
			} else {
				b.WriteString("deleted file mode 100644\n")
			}
			continue
		}
		fmt.Fprintf(&b, "--- %s\n+++ %s\n", oldName, newName)
		for _, h := range f.Hunks {
			b.WriteString(h.header() + "\n")
			for _, l := range h.Lines {
				b.WriteByte(l.Op)
				b.WriteString(l.Text)
				if !strings.HasSuffix(l.Text, "\n") {
					b.WriteString("\n\\ No newline at end of file\n")
				}
			}
		}
	}
	return b.String()
}

func TestParsePatch(t *testing.T) {
	tests := []struct {
		name  string
		patch string
		want  string // summary: per file "action path hunks=N" and hunk sides
	}{
		{"git update", `diff --git a/x.go b/x.go
index 123..456 100644
--- a/x.go
+++ b/x.go
@@ -1,3 +1,3 @@ func main() {
 a
-b
+B
 c
`, "update x.go [-1,3 +1,3 ' a\n' '-b\n' '+B\n' ' c\n']"},
		{"plain diff -u with timestamps", "--- x.txt\t2024-01-01 10:00:00.000 +0000\n+++ x.txt\t2024-01-02 10:00:00.000 +0000\n@@ -1 +1 @@\n-a\n+b\n",
			"update x.txt [-1,1 +1,1 '-a\n' '+b\n']"},
		{"new file", "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n", "add new.txt [-0,0 +1,2 '+one\n' '+two\n']"},
		{"deleted file", "--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n", "delete old.txt [-1,1 +0,0 '-gone\n']"},
		{"no newline markers", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n",
			"update f [-1,1 +1,1 '-a' '+b']"},
		{"context without newline", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-x\n+y\n z\n\\ No newline at end of file\n",
			"update f [-1,2 +1,2 '-x\n' '+y\n' ' z']"},
		{"empty context line", "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n", "update f [-1,3 +1,3 ' a\n' ' \n' '-b\n' '+c\n']"},
		{"two files and preamble", "Subject: fix\n\nsome text\n---\n a | 2 +-\n\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-1\n+2\nIndex: b\n===\n--- a/b\n+++ b/b\n@@ -2,0 +3 @@\n+new\n-- \n2.40.0\n",
			"update a [-1,1 +1,1 '-1\n' '+2\n'] update b [-2,0 +3,1 '+new\n']"},
		{"two hunks", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n@@ -10,2 +10,2 @@\n x\n-y\n+Y\n",
			"update f [-1,2 +1,2 '-a\n' '+A\n' ' b\n'] [-10,2 +10,2 ' x\n' '-y\n' '+Y\n']"},
		{"git section then plain section", "diff --git a/x b/x\nnew file mode 100755\n--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+x\n--- a/y\n+++ b/y\n@@ -1 +1 @@\n-a\n+b\n",
			"add x [-0,0 +1,1 '+x\n'] update y [-1,1 +1,1 '-a\n' '+b\n']"},
		{"git empty new file", "diff --git a/e.txt b/e.txt\nnew file mode 100644\nindex 0000000..e69de29\n", "add e.txt"},
		{"git empty deleted file", "diff --git a/e.txt b/e.txt\ndeleted file mode 100644\n", "delete e.txt"},
		{"quoted names", "--- \"a/sp ace\\t.txt\"\n+++ \"b/sp ace\\t.txt\"\n@@ -1 +1 @@\n-a\n+b\n", "update sp ace\t.txt [-1,1 +1,1 '-a\n' '+b\n']"},
		{"no prefixes", "--- dir/f\n+++ dir/f\n@@ -1 +1 @@\n-a\n+b\n", "update dir/f [-1,1 +1,1 '-a\n' '+b\n']"},
		{"crlf patch", "--- a/f\r\n+++ b/f\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n", "update f [-1,1 +1,1 '-a\r\n' '+b\r\n']"},
		{"no trailing newline", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b", "update f [-1,1 +1,1 '-a\n' '+b\n']"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files, err := parsePatch(tc.patch)
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "git section then plain section" && (!files[0].ExecMode || files[1].ExecMode) {
				t.Errorf("exec modes %v %v", files[0].ExecMode, files[1].ExecMode)
			}
			if got := summarize(files); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			// Formatting and parsing again gives the same sections.
			again, err := parsePatch(formatPatch(files))
			if err != nil {
				t.Fatalf("reparse: %v\n%s", err, formatPatch(files))
			}
			if summarize(again) != summarize(files) {
				t.Errorf("round trip changed the patch:\n%s\n%s", summarize(again), summarize(files))
			}
		})
	}
}

func summarize(files []*filePatch) string {
	var parts []string
	for _, f := range files {
		s := f.Action() + " " + f.Path()
		for _, h := range f.Hunks {
			s += fmt.Sprintf(" [-%d,%d +%d,%d", h.OldStart, h.OldLines, h.NewStart, h.NewLines)
			for _, l := range h.Lines {
				s += fmt.Sprintf(" '%c%s'", l.Op, l.Text)
			}
			s += "]"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func TestParsePatchErrors(t *testing.T) {
	tests := []struct{ name, patch, want string }{
		{"empty", "", "no file changes found"},
		{"prose", "just some text\n", "no file changes found"},
		{"hunk without header", "@@ -1 +1 @@\n-a\n+b\n", "hunk without a file header"},
		{"no hunks", "--- a/f\n+++ b/f\n", "no hunks for f"},
		{"short hunk", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n+b\n", "ends early: 1 old and 1 new lines missing"},
		{"long hunk", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n+c\n", "counts in the hunk header do not match"},
		{"too many old", "--- a/f\n+++ b/f\n@@ -1 +1,2 @@\n-a\n-b\n+c\n", "more old lines than its header says"},
		{"bad header", "--- a/f\n+++ b/f\n@@ -x +1 @@\n", "malformed hunk header"},
		{"bad header 2", "--- a/f\n+++ b/f\n@@ -1 +1\n-a\n+b\n", "malformed hunk header"},
		{"empty hunk", "--- a/f\n+++ b/f\n@@ -1,0 +1,0 @@\n", "empty hunk"},
		{"huge line number", "--- a/f\n+++ b/f\n@@ -99999999999 +1 @@\n-a\n+b\n", "bad line number"},
		{"rename", "--- a/f\n+++ b/g\n@@ -1 +1 @@\n-a\n+b\n", "renames are not supported"},
		{"git rename", "diff --git a/f b/g\nsimilarity index 100%\nrename from f\nrename to g\n", "renames are not supported"},
		{"binary", "diff --git a/f b/f\nGIT binary patch\nliteral 0\n", "binary patches are not supported"},
		{"both null", "--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+a\n", "both file names are /dev/null"},
		{"new file with old lines", "--- /dev/null\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n", "new file f has old lines"},
		{"deleted file with new lines", "--- a/f\n+++ /dev/null\n@@ -1 +1 @@\n-a\n+b\n", "deleted file f has new lines"},
		{"marker first", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n\\ No newline at end of file\n-a\n+b\n", "must follow a hunk line"},
		{"line after marker", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n\\ No newline at end of file\n-b\n+c\n+d\n", "continues after"},
		{"garbage in hunk", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n+b\nhello\n", "unexpected line \"hello\""},
		{"mode change only", "diff --git a/f b/f\nold mode 100644\nnew mode 100755\n", "mode changes are not supported"},
		{"nul in name", "--- a/f\x00\n+++ b/f\x00\n@@ -1 +1 @@\n-a\n+b\n", "NUL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parsePatch(tc.patch)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestApplyHunks(t *testing.T) {
	tests := []struct {
		name, content, patch, want, err string
	}{
		{"simple", "a\nb\nc\n", "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n", "a\nB\nc\n", ""},
		{"offset", "x\ny\na\nb\nc\n", "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n", "x\ny\na\nB\nc\n", ""},
		{"nearest of two", "a\nb\nc\nz\na\nb\nc\n", "@@ -5,3 +5,3 @@\n a\n-b\n+B\n c\n", "a\nb\nc\nz\na\nB\nc\n", ""},
		{"insert at top", "a\n", "@@ -0,0 +1 @@\n+top\n", "top\na\n", ""},
		{"insert after line", "a\nb\n", "@@ -1,0 +2 @@\n+mid\n", "a\nmid\nb\n", ""},
		{"append", "a\n", "@@ -1,0 +2 @@\n+end\n", "a\nend\n", ""},
		{"remove newline at eof", "a\nb\n", "@@ -2 +2 @@\n-b\n+b\n\\ No newline at end of file\n", "a\nb", ""},
		{"add newline at eof", "a\nb", "@@ -2 +2 @@\n-b\n\\ No newline at end of file\n+b\n", "a\nb\n", ""},
		{"forgotten no-newline marker", "a\nb", "@@ -1,2 +1,2 @@\n a\n-b\n+c\n", "a\nc", ""},
		{"lf patch on crlf file", "a\r\nb\r\n", "@@ -1,2 +1,2 @@\n a\n-b\n+c\n", "a\r\nc\r\n", ""},
		{"crlf patch on lf file", "a\nb\n", "@@ -1,2 +1,2 @@\r\n a\r\n-b\r\n+c\r\n", "a\nc\n", ""},
		{"two hunks shifted", "0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n", "@@ -2 +2,2 @@\n-1\n+1a\n+1b\n@@ -9 +10 @@\n-8\n+eight\n", "0\n1a\n1b\n2\n3\n4\n5\n6\n7\neight\n9\n", ""},
		{"mismatch", "a\nb\nc\n", "@@ -1,3 +1,3 @@\n a\n-x\n+B\n c\n", "", `where the patch expects "x"`},
		{"past end", "a\n", "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n", "", "do not fit"},
		{"insert past end", "a\n", "@@ -5,0 +6 @@\n+x\n", "", "inserts at line 5, but the file has 1 lines"},
		{"overlapping hunks", "a\nb\nc\n", "@@ -1,2 +1,2 @@\n a\n-b\n+B\n@@ -2 +2 @@\n-b\n+C\n", "", "hunk 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files, err := parsePatch("--- a/f\n+++ b/f\n" + tc.patch)
			if err != nil {
				t.Fatal(err)
			}
			got, err := applyHunks(context.Background(), tc.content, files[0].Hunks)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestApplyPatchTool(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "one\ntwo\nthree\n")
	e.write("gone.txt", "bye\n")
	e.write("empty.txt", "")
	patch := `diff --git a/a.txt b/a.txt
--- a/a.txt
+++ b/a.txt
@@ -1,3 +1,3 @@
 one
-two
+TWO
 three
diff --git a/new/dir/n.txt b/new/dir/n.txt
new file mode 100755
--- /dev/null
+++ b/new/dir/n.txt
@@ -0,0 +1,2 @@
+#!/bin/sh
+echo hi
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
diff --git a/empty.txt b/empty.txt
deleted file mode 100644
`
	got := e.mustCall("apply_patch", map[string]any{"patch": patch})
	want := `[{"action":"update","hunks":1,"path":"a.txt"},{"action":"add","hunks":1,"path":"new/dir/n.txt"},{"action":"delete","hunks":1,"path":"gone.txt"},{"action":"delete","hunks":0,"path":"empty.txt"}]`
	if s := jsonString(t, got["files"]); s != want {
		t.Errorf("files %s", s)
	}
	if e.read("a.txt") != "one\nTWO\nthree\n" || e.read("new/dir/n.txt") != "#!/bin/sh\necho hi\n" || e.exists("gone.txt") || e.exists("empty.txt") {
		t.Error("files not as patched")
	}
	if fi, _ := os.Stat(filepath.Join(e.dir, "new/dir/n.txt")); fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("new file mode 100755 not honoured: %v", fi.Mode())
	}
	res, _ := e.call("apply_patch", map[string]any{"patch": "--- a/a.txt\n+++ b/a.txt\n@@ -2 +2 @@\n-TWO\n+2\n"})
	if res.Content[0].Text != "Applied patch:\nU a.txt (1 hunk)\n" {
		t.Errorf("text %q", res.Content[0].Text)
	}
	// The same file twice in one patch applies in order.
	e.mustCall("apply_patch", map[string]any{"patch": "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+1\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-1\n+uno\n"})
	if e.read("a.txt") != "uno\n2\nthree\n" {
		t.Errorf("a.txt = %q", e.read("a.txt"))
	}
	errs := []struct{ patch, want string }{
		{"--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+x\n", "apply_patch: a.txt: the patch adds this file, but it already exists"},
		{"--- a/nope.txt\n+++ b/nope.txt\n@@ -1 +1 @@\n-x\n+y\n", "apply_patch: nope.txt: no such file to patch"},
		{"--- a/nope.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n", "does not exist"},
		{"--- a/a.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-uno\n", "do not remove all of its content"},
		{"--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-zzz\n+y\n", "apply_patch: a.txt: hunk 1 (@@ -1 +1 @@): its old lines are not in the file"},
		{"--- a/nope2\n+++ b/nope2\n@@ -1 +1 @@\n-a\n+b\n", "no such file"},
		{"--- a/.\n+++ b/.\n@@ -1 +1 @@\n-a\n+b\n", "workspace directory itself"},
	}
	for _, tc := range errs {
		if got := e.callErr("apply_patch", map[string]any{"patch": tc.patch}); !strings.Contains(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.patch, got, tc.want)
		}
	}
}

// TestApplyPatchAtomic: when any hunk of any file fails, no file changes.
func TestApplyPatchAtomic(t *testing.T) {
	e := newEnv(t)
	e.write("first.txt", "1\n2\n3\n")
	e.write("second.txt", "a\nb\nc\n")
	e.write("del.txt", "d\n")
	patch := `--- a/first.txt
+++ b/first.txt
@@ -1,3 +1,3 @@
 1
-2
+TWO
 3
--- /dev/null
+++ b/created/new.txt
@@ -0,0 +1 @@
+new
--- a/del.txt
+++ /dev/null
@@ -1 +0,0 @@
-d
--- a/second.txt
+++ b/second.txt
@@ -1 +1 @@
-a
+A
@@ -3 +3 @@
-WRONG
+C
`
	got := e.callErr("apply_patch", map[string]any{"patch": patch})
	if !strings.Contains(got, "second.txt: hunk 2") {
		t.Errorf("error %q", got)
	}
	if e.read("first.txt") != "1\n2\n3\n" || e.read("second.txt") != "a\nb\nc\n" || !e.exists("del.txt") || e.exists("created") {
		t.Error("a failed patch changed the workspace")
	}
	entries, _ := os.ReadDir(e.dir)
	if len(entries) != 3 {
		t.Errorf("workspace has %d entries", len(entries))
	}
}

// TestDiffApplyRoundTrip: a diff made by unifiedDiff parses and applies back to the new text.
func TestDiffApplyRoundTrip(t *testing.T) {
	cases := [][2]string{
		{"", "a\n"},
		{"a\n", ""},
		{"a\nb\nc\n", "a\nc\n"},
		{"a\nb", "a\nb\n"},
		{"a\nb\n", "a\nb"},
		{"x", "y"},
		{strings.Repeat("l\n", 50), strings.Repeat("l\n", 20) + "m\n" + strings.Repeat("l\n", 30)},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		cases = append(cases, [2]string{randomText(r), randomText(r)})
	}
	for _, c := range cases {
		checkRoundTrip(t, c[0], c[1])
	}
}

func randomText(r *rand.Rand) string {
	var b strings.Builder
	n := r.IntN(30)
	for i := range n {
		b.WriteString([]string{"a", "b", "c", "", "d d"}[r.IntN(5)])
		if i < n-1 || r.IntN(3) > 0 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func checkRoundTrip(t *testing.T, old, new string) {
	t.Helper()
	diff, truncated := unifiedDiff("f", "f", old, new, 1<<30)
	if truncated {
		t.Fatal("truncated")
	}
	if old == new {
		if diff != "" {
			t.Fatalf("diff of equal texts: %q", diff)
		}
		return
	}
	files, err := parsePatch(diff)
	if err != nil {
		t.Fatalf("parse %q→%q: %v\n%s", old, new, err, diff)
	}
	if len(files) != 1 {
		t.Fatalf("%d files", len(files))
	}
	got, err := applyHunks(context.Background(), old, files[0].Hunks)
	if err != nil {
		t.Fatalf("apply %q→%q: %v\n%s", old, new, err, diff)
	}
	if got != new {
		t.Fatalf("apply %q→%q gave %q\n%s", old, new, got, diff)
	}
}

func TestDiffMinimal(t *testing.T) {
	old := "a\nb\nc\nd\ne\nf\ng\n"
	new := "a\nb\nX\nd\ne\nf\ng\n"
	diff, _ := unifiedDiff("f", "f", old, new, 1<<20)
	want := "--- a/f\n+++ b/f\n@@ -1,6 +1,6 @@\n a\n b\n-c\n+X\n d\n e\n f\n"
	if diff != want {
		t.Errorf("diff\n%s\nwant\n%s", diff, want)
	}
	// Changes far apart make separate hunks.
	lines := strings.Repeat("x\n", 20)
	diff, _ = unifiedDiff("f", "f", "A\n"+lines+"B\n", "a\n"+lines+"b\n", 1<<20)
	if strings.Count(diff, "@@ -") != 2 {
		t.Errorf("want two hunks:\n%s", diff)
	}
	// Beyond diffMaxD the diff falls back to one block but stays correct.
	var o, n strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&o, "%d\n", i)
		fmt.Fprintf(&n, "%d\n", i*7%2000)
	}
	checkRoundTrip(t, o.String(), n.String())
}

func FuzzParsePatch(f *testing.F) {
	seeds := []string{
		"--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n",
		"--- /dev/null\n+++ b/n\n@@ -0,0 +1 @@\n+x\n\\ No newline at end of file\n",
		"diff --git a/e b/e\nnew file mode 100644\n",
		"--- \"a/q\\\"x\"\n+++ \"b/q\\\"x\"\n@@ -1 +1 @@\n-a\n+b\n",
		"--- a/f\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n",
		"@@ -1 +1 @@\n",
		"--- a\n+++ b\n@@ -1,1 +1,1 @@\n\n",
	}
	for _, s := range seeds {
		f.Add(s, "a\nb\nc\n")
	}
	f.Fuzz(func(t *testing.T, patch, content string) {
		files, err := parsePatch(patch)
		if err != nil {
			return
		}
		// Whatever parses formats back to an equivalent patch.
		again, err := parsePatch(formatPatch(files))
		if err != nil {
			t.Fatalf("reparse failed: %v\n%q\n%q", err, patch, formatPatch(files))
		}
		if summarize(again) != summarize(files) {
			t.Fatalf("round trip changed the patch:\n%q\n%q", summarize(files), summarize(again))
		}
		for _, fp := range files {
			if fp.Path() == "" {
				t.Fatal("a section without a path")
			}
			for _, h := range fp.Hunks {
				old, new := h.sides()
				if len(old) != h.OldLines || len(new) != h.NewLines {
					t.Fatalf("hunk %s has %d/%d lines", h.header(), len(old), len(new))
				}
			}
			// Applying never panics, and a successful application keeps the untouched lines.
			if _, err := applyHunks(context.Background(), content, fp.Hunks); err != nil {
				continue
			}
		}
	})
}

// FuzzDiffApply: diff(old, new) applied to old gives new.
func FuzzDiffApply(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nc\nd")
	f.Add("", "x")
	f.Add("x\r\ny\r\n", "x\r\nz\r\n")
	f.Fuzz(func(t *testing.T, old, new string) {
		if len(old)+len(new) > 1<<16 {
			return
		}
		checkRoundTrip(t, old, new)
	})
}
