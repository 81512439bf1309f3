package confine

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// layout builds base/ws (the root) and base/outside, with symlinks leading in and out:
//
//	ws/a.txt, ws/dir/b.txt
//	ws/okdir → dir, ws/okfile → a.txt     (stay inside)
//	ws/out → ../outside, ws/outfile → ../outside/secret.txt (lead out)
//	ws/dangling → missing
func layout(t testing.TB) (base string, r Root) {
	t.Helper()
	base = t.TempDir()
	ws := filepath.Join(base, "ws")
	for _, d := range []string{filepath.Join(ws, "dir"), filepath.Join(base, "outside")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range map[string]string{
		"ws/a.txt": "a", "ws/dir/b.txt": "b", "outside/secret.txt": "secret",
	} {
		if err := os.WriteFile(filepath.Join(base, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"okdir": "dir", "okfile": "a.txt", "out": "../outside", "outfile": "../outside/secret.txt", "dangling": "missing",
	} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	r, err := New(ws)
	if err != nil {
		t.Fatal(err)
	}
	return base, r
}

func TestNew(t *testing.T) {
	base, r := layout(t)
	if r.Abs != filepath.Join(base, "ws") {
		t.Errorf("Abs = %s", r.Abs)
	}
	// Through a symlink: Abs keeps the link, Real resolves it.
	link := filepath.Join(base, "wslink")
	if err := os.Symlink("ws", link); err != nil {
		t.Fatal(err)
	}
	lr, err := New(link)
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(r.Abs)
	if lr.Abs != link || lr.Real != real {
		t.Errorf("New(link) = %+v, want Abs %s, Real %s", lr, link, real)
	}
	// "" is the current directory.
	t.Chdir(r.Abs)
	if cr, err := New(""); err != nil || cr.Real != real {
		t.Errorf(`New("") = %+v, %v`, cr, err)
	}

	for _, tc := range []struct{ dir, want string }{
		{filepath.Join(base, "missing"), "workspace " + filepath.Join(base, "missing") + ": no such file or directory"},
		{filepath.Join(base, "ws", "a.txt"), "workspace " + filepath.Join(base, "ws", "a.txt") + " is not a directory"},
		{filepath.Join(base, "ws", "dangling"), "no such file or directory"},
	} {
		t.Run(filepath.Base(tc.dir), func(t *testing.T) {
			if _, err := New(tc.dir); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New(%s) = %v, want %q", tc.dir, err, tc.want)
			}
		})
	}
}

func TestLexical(t *testing.T) {
	base, r := layout(t)
	tests := []struct {
		p, want, err string
	}{
		{".", ".", ""},
		{"", ".", ""},
		{"a.txt", "a.txt", ""},
		{"./dir//b.txt/", filepath.Join("dir", "b.txt"), ""},
		{"dir/../a.txt", "a.txt", ""},
		{"new/deeper", filepath.Join("new", "deeper"), ""},
		{filepath.Join(base, "ws", "dir"), "dir", ""},
		{filepath.Join(base, "ws"), ".", ""},
		{"..", "", ".. is outside the workspace"},
		{"../ws/a.txt", "", "../ws/a.txt is outside the workspace"},
		{"dir/../../x", "", "is outside the workspace"},
		{"/etc/passwd", "", "/etc/passwd is outside the workspace"},
		{filepath.Join(base, "outside"), "", "is outside the workspace"},
		{filepath.Join(base, "wsx"), "", "is outside the workspace"},
		{"a\x00b", "", `path "a\x00b" contains a NUL byte`},
		{strings.Repeat("a/", 2049), "", "path is 4098 bytes long (limit 4096)"},
		{"..foo", "..foo", ""}, // a name, not an escape
	}
	for _, tc := range tests {
		t.Run(tc.p[:min(len(tc.p), 30)], func(t *testing.T) {
			got, err := r.Lexical(tc.p)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Lexical(%q) = %q, %v; want error %q", tc.p, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Lexical(%q) = %q, %v; want %q", tc.p, got, err, tc.want)
			}
		})
	}
}

// TestResolve: Resolve (file access) and Check (names that need not exist) confine alike; they
// differ only on components that exist but cannot be examined.
func TestResolve(t *testing.T) {
	base, r := layout(t)
	tests := []struct {
		p         string
		show, rel string // Rel in slash form
		err       string // for both, unless checkErr says otherwise
		checkErr  string // "-" means Check succeeds with show and rel
	}{
		{p: ".", show: ".", rel: "."},
		{p: "a.txt", show: "a.txt", rel: "a.txt"},
		{p: "okfile", show: "okfile", rel: "a.txt"},
		{p: "okdir/b.txt", show: "okdir/b.txt", rel: "dir/b.txt"},
		{p: "okdir/new/deeper.txt", show: "okdir/new/deeper.txt", rel: "dir/new/deeper.txt"},
		{p: "missing/x", show: "missing/x", rel: "missing/x"},
		{p: filepath.Join(base, "ws", "okdir"), show: "okdir", rel: "dir"},
		{p: "out", err: "out resolves outside the workspace (through a symlink)"},
		{p: "out/secret.txt", err: "out/secret.txt resolves outside the workspace (through a symlink)"},
		{p: "out/missing/deeper", err: "resolves outside the workspace (through a symlink)"},
		{p: "outfile", err: "outfile resolves outside the workspace (through a symlink)"},
		{p: "dangling", err: "dangling goes through a symlink whose target does not exist"},
		{p: "dangling/x", err: "dangling/x goes through a symlink whose target does not exist"},
		{p: "../outside/secret.txt", err: "is outside the workspace"},
		{p: "a\x00", err: "contains a NUL byte"},
		// a.txt is a file: Resolve cannot look below it, Check walks up to it.
		{p: "a.txt/x", show: "a.txt/x", rel: "a.txt/x", err: "a.txt/x: not a directory", checkErr: "-"},
	}
	for _, tc := range tests {
		for _, check := range []bool{false, true} {
			name := "Resolve"
			resolve := r.Resolve
			if check {
				name, resolve = "Check", r.Check
			}
			t.Run(name+"/"+tc.p[:min(len(tc.p), 30)], func(t *testing.T) {
				want := tc.err
				if check && tc.checkErr != "" {
					want = tc.checkErr
				}
				got, err := resolve(tc.p)
				if want != "" && want != "-" {
					if err == nil || !strings.Contains(err.Error(), want) {
						t.Fatalf("%s(%q) = %+v, %v; want error %q", name, tc.p, got, err, want)
					}
					return
				}
				if err != nil || got.Show != tc.show || filepath.ToSlash(got.Rel) != tc.rel {
					t.Fatalf("%s(%q) = %+v, %v; want {%s %s}", name, tc.p, got, err, tc.show, tc.rel)
				}
			})
		}
	}
}

func TestResolveWorkspaceGone(t *testing.T) {
	_, r := layout(t)
	if err := os.RemoveAll(r.Real); err != nil {
		t.Fatal(err)
	}
	for _, resolve := range []func(string) (Path, error){r.Resolve, r.Check} {
		if _, err := resolve("a.txt"); err == nil || !strings.Contains(err.Error(), "the workspace "+r.Abs+" no longer exists") {
			t.Errorf("err = %v", err)
		}
	}
}

func TestPathError(t *testing.T) {
	_, r := layout(t)
	_, err := r.Resolve("a.txt/x")
	var pe *PathError
	if !errors.As(err, &pe) || pe.Path != "a.txt/x" || !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("err = %#v", err)
	}
	if strings.Contains(err.Error(), r.Real) {
		t.Errorf("%q shows the host path", err)
	}
}

func TestWithin(t *testing.T) {
	sep := string(filepath.Separator)
	base := sep + filepath.Join("a", "b")
	tests := []struct {
		target, rel string
		ok          bool
	}{
		{base, ".", true},
		{filepath.Join(base, "c"), "c", true},
		{filepath.Join(base, "c", "d"), filepath.Join("c", "d"), true},
		{sep + "a", "", false},
		{sep + filepath.Join("a", "bc"), "", false},
		{sep + filepath.Join("x", "b"), "", false},
		{filepath.Join(base, "..c"), "..c", true},
	}
	for _, tc := range tests {
		if rel, ok := Within(base, tc.target); rel != tc.rel || ok != tc.ok {
			t.Errorf("Within(%s, %s) = %q, %v; want %q, %v", base, tc.target, rel, ok, tc.rel, tc.ok)
		}
	}
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&fs.PathError{Op: "open", Path: "/host/x", Err: fs.ErrNotExist}, "no such file or directory"},
		{&fs.PathError{Op: "open", Path: "/host/x", Err: syscall.EACCES}, "permission denied"},
		{&fs.PathError{Op: "open", Path: "/host/x", Err: syscall.ENOTDIR}, "not a directory"},
		{&fs.PathError{Op: "open", Path: "/host/x", Err: syscall.EISDIR}, "is a directory"},
		{&fs.PathError{Op: "open", Path: "/host/x", Err: syscall.ELOOP}, "too many levels of symlinks"},
		{&fs.PathError{Op: "openat", Path: "../x", Err: errors.New("path escapes from parent")}, "resolves outside the workspace"},
		{&fs.PathError{Op: "open", Path: "/host/x", Err: errors.New("disk on fire")}, "disk on fire"},
		{&os.LinkError{Op: "rename", Old: "/host/a", New: "/host/b", Err: errors.New("cross-device")}, "cross-device"},
		{errors.New("plain"), "plain"},
	}
	for _, tc := range tests {
		if got := Describe(tc.err); got != tc.want {
			t.Errorf("Describe(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// FuzzResolve: whatever the path, Resolve and Check refuse it or return a path inside the root
// that does not climb with "..", and a refusal never shows the host path of the root.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"", ".", "..", "a/../..", "/etc", "okdir/b.txt", "./a//b/", "a\x00", "out/x",
		"../ws/a.txt", "dir/../../ws", "dangling/x", "a.txt/x", "okdir/../out"} {
		f.Add(s)
	}
	base, r := layout(f)
	f.Fuzz(func(t *testing.T, p string) {
		for _, resolve := range []func(string) (Path, error){r.Resolve, r.Check} {
			got, err := resolve(p)
			if err != nil {
				if !filepath.IsAbs(p) && strings.Contains(err.Error(), base) && !strings.Contains(err.Error(), "no longer exists") {
					t.Fatalf("error for %q shows the host path: %v", p, err)
				}
				continue
			}
			for _, rel := range []string{got.Rel, filepath.FromSlash(got.Show)} {
				if filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
					t.Fatalf("%q resolved to %+v", p, got)
				}
			}
			real, err := filepath.EvalSymlinks(filepath.Join(r.Real, got.Rel))
			if err == nil {
				if _, ok := Within(r.Real, real); !ok {
					t.Fatalf("%q resolved to %+v, which is %s", p, got, real)
				}
			}
		}
	})
}
