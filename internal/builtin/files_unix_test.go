//go:build unix

package builtin

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestSpecialFilesRefused: a FIFO is refused without opening it (opening would block).
func TestSpecialFilesRefused(t *testing.T) {
	e := newEnv(t)
	if err := syscall.Mkfifo(filepath.Join(e.dir, "fifo"), 0o644); err != nil {
		t.Skip(err)
	}
	for _, tc := range []struct {
		tool  string
		input map[string]any
	}{
		{"read", map[string]any{"path": "fifo"}},
		{"edit", map[string]any{"path": "fifo", "oldText": "a", "newText": "b"}},
		{"write", map[string]any{"path": "fifo", "content": "x"}},
		{"apply_patch", map[string]any{"patch": "--- a/fifo\n+++ b/fifo\n@@ -1 +1 @@\n-a\n+b\n"}},
	} {
		if got := e.callErr(tc.tool, tc.input); !strings.Contains(got, "fifo is not a regular file") {
			t.Errorf("%s: %q", tc.tool, got)
		}
	}
	// grep skips it.
	if got := e.mustCall("grep", map[string]any{"pattern": "x", "path": "fifo"}); len(got["matches"].([]any)) != 0 {
		t.Errorf("grep: %v", got)
	}
	if got := e.mustCall("ls", map[string]any{}); !strings.Contains(jsonString(t, got["entries"]), `"type":"other"`) {
		t.Errorf("ls: %v", got)
	}
}
