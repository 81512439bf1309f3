package builtin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/confine"
	"github.com/codemode-go/codemode/internal/nativetool"
)

const applyPatchInput = `{
  "type": "object",
  "properties": {
    "patch": {"type": "string", "description": "A unified diff (diff -u or git diff format) touching one or more files; --- /dev/null adds a file, +++ /dev/null deletes one."}
  },
  "required": ["patch"],
  "additionalProperties": false
}`

const applyPatchOutput = `{
  "type": "object",
  "properties": {
    "files": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {
          "path": {"type": "string"},
          "action": {"enum": ["add", "update", "delete"]},
          "hunks": {"type": "integer", "minimum": 0, "description": "Hunks applied."}
        },
        "required": ["path", "action", "hunks"],
        "additionalProperties": false
      }
    }
  },
  "required": ["files"],
  "additionalProperties": false
}`

type applyPatchArgs struct {
	Patch *string `json:"patch"`
}

type patchedFile struct {
	Path   string `json:"path"`
	Action string `json:"action"`
	Hunks  int    `json:"hunks"`
}

type applyPatchDetails struct {
	Files []patchedFile `json:"files"`
}

func applyPatchTool(ws *workspace) *api.Tool {
	return typedTool("apply_patch", "Apply patch",
		"Apply a unified diff to files in the workspace: modify, add (--- /dev/null) and delete (+++ /dev/null) files. All hunks of all files are checked first; if any does not apply, nothing is changed.",
		applyPatchInput, applyPatchOutput, false,
		func(ctx context.Context, in *applyPatchArgs) (*api.Result, error) {
			if in.Patch == nil || strings.TrimSpace(*in.Patch) == "" {
				return nil, errors.New("apply_patch: patch is required")
			}
			d, err := ws.applyPatch(ctx, *in.Patch)
			if err != nil {
				return nil, err
			}
			var b strings.Builder
			b.WriteString("Applied patch:\n")
			for _, f := range d.Files {
				fmt.Fprintf(&b, "%s %s (%d hunk%s)\n", strings.ToUpper(f.Action[:1]), f.Path, f.Hunks, plural(f.Hunks))
			}
			return nativetool.Result(b.String(), d)
		})
}

// pendingFile is one file's state while a patch is applied in memory.
type pendingFile struct {
	p        confine.Path
	existed  bool        // on disk before the patch
	mode     fs.FileMode // permission bits on disk, when it existed
	exists   bool        // after the sections applied so far
	content  string
	execMode bool // a new file that git marks executable
}

func (w *workspace) applyPatch(ctx context.Context, text string) (*applyPatchDetails, error) {
	files, err := parsePatch(text)
	if err != nil {
		return nil, fmt.Errorf("apply_patch: %v", err)
	}
	root, err := w.open("apply_patch")
	if err != nil {
		return nil, err
	}
	defer root.Close()

	// Phase 1: apply every section in memory, reading each file once.
	state := map[string]*pendingFile{}
	var order []*pendingFile
	var total int64
	d := &applyPatchDetails{Files: []patchedFile{}}
	for _, fp := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p, err := w.resolve("apply_patch", fp.Path())
		if err != nil {
			return nil, err
		}
		if p.Rel == "." {
			return nil, fmt.Errorf("apply_patch: %s names the workspace directory itself", fp.Path())
		}
		pf := state[p.Rel]
		if pf == nil {
			pf = &pendingFile{p: p}
			fi, exists, err := statFile("apply_patch", root, p)
			if err != nil {
				return nil, err
			}
			if exists {
				data, _, err := readSmallFile("apply_patch", root, p, maxFileBytes)
				if err != nil {
					return nil, err
				}
				pf.existed, pf.exists, pf.content, pf.mode = true, true, string(data), fi.Mode().Perm()
			}
			state[p.Rel] = pf
			order = append(order, pf)
		}
		where := fmt.Sprintf("apply_patch: %s", p.Show)
		switch fp.Action() {
		case "add":
			if pf.exists {
				return nil, fmt.Errorf("%s: the patch adds this file, but it already exists", where)
			}
			content, err := applyHunks(ctx, "", fp.Hunks)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", where, err)
			}
			pf.exists, pf.content, pf.execMode = true, content, fp.ExecMode
		case "delete":
			if !pf.exists {
				return nil, fmt.Errorf("%s: the patch deletes this file, but it does not exist", where)
			}
			rest, err := applyHunks(ctx, pf.content, fp.Hunks)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", where, err)
			}
			if rest != "" {
				return nil, fmt.Errorf("%s: the patch deletes this file, but its hunks do not remove all of its content", where)
			}
			pf.exists, pf.content = false, ""
		default:
			if !pf.exists {
				return nil, fmt.Errorf("%s: no such file to patch", where)
			}
			content, err := applyHunks(ctx, pf.content, fp.Hunks)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", where, err)
			}
			pf.content = content
		}
		if len(pf.content) > maxFileBytes {
			return nil, fmt.Errorf("%s: the patched file would be %d bytes (limit %d)", where, len(pf.content), maxFileBytes)
		}
		total += int64(len(pf.content))
		if total > 8*maxFileBytes {
			return nil, errors.New("apply_patch: the patch writes too much data in total")
		}
		d.Files = append(d.Files, patchedFile{Path: p.Show, Action: fp.Action(), Hunks: len(fp.Hunks)})
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// Phase 2: write every new content to a temporary file next to its destination. A
	// failure here removes the temporary files and leaves the workspace as it was (apart from
	// parent directories created for new files).
	var temps []*tempFile
	discard := func() {
		for _, t := range temps {
			t.discard(root)
		}
	}
	for _, pf := range order {
		if !pf.exists {
			continue
		}
		if !pf.existed {
			if err := root.MkdirAll(filepath.Dir(pf.p.Rel), 0o755); err != nil {
				discard()
				return nil, pathErr("apply_patch", pf.p.Show, err)
			}
		}
		t, err := writeTemp(root, pf.p.Rel, []byte(pf.content), pf.mode, pf.execMode)
		if err != nil {
			discard()
			return nil, pathErr("apply_patch", pf.p.Show, err)
		}
		temps = append(temps, t)
	}

	// Phase 3: rename the temporary files into place, then delete files. Renames within a
	// directory do not fail short of the disk or the workspace going away.
	for i, t := range temps {
		if err := t.commit(root); err != nil {
			for _, rest := range temps[i+1:] {
				rest.discard(root)
			}
			return nil, fmt.Errorf("apply_patch: writing %s failed after %d of %d files were written: %v",
				filepath.ToSlash(t.dst), i, len(temps), confine.Describe(err))
		}
	}
	for _, pf := range order {
		if pf.existed && !pf.exists {
			if err := root.Remove(pf.p.Rel); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, pathErr("apply_patch", pf.p.Show, err)
			}
		}
	}
	return d, nil
}
