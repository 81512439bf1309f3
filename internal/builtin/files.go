package builtin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/confine"
	"github.com/codemode-go/codemode/internal/nativetool"
)

// ---- read ----

const readInput = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path relative to the workspace root (an absolute path must be inside it)."},
    "offset": {"type": "integer", "minimum": 1, "description": "1-based line to start at (default 1)."},
    "limit": {"type": "integer", "minimum": 1, "description": "Most lines to return (default: as many as fit in 1 MiB)."}
  },
  "required": ["path"],
  "additionalProperties": false
}`

const readOutput = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "The path read, relative to the workspace root."},
    "content": {"type": "string", "description": "The requested lines, with their line endings."},
    "lines": {"type": "integer", "minimum": 0, "description": "Total number of lines in the file."},
    "offset": {"type": "integer", "minimum": 1, "description": "1-based line content starts at."},
    "truncated": {"type": "boolean", "description": "True when the file continues after content; read again with a larger offset."},
    "bytes": {"type": "integer", "minimum": 0, "description": "Size of the whole file in bytes."}
  },
  "required": ["path", "content", "lines", "offset", "truncated", "bytes"],
  "additionalProperties": false
}`

type readArgs struct {
	Path   string `json:"path"`
	Offset *int   `json:"offset"`
	Limit  *int   `json:"limit"`
}

type readDetails struct {
	Path      string `json:"path"`
	Content   string `json:"content"`
	Lines     int    `json:"lines"`
	Offset    int    `json:"offset"`
	Truncated bool   `json:"truncated"`
	Bytes     int64  `json:"bytes"`
}

func readTool(ws *workspace) *api.Tool {
	return typedTool("read", "Read file",
		"Read a text file in the workspace, optionally a window of lines (offset is 1-based). At most 1 MiB is returned per call; use offset and limit to page through larger files.",
		readInput, readOutput, true,
		func(ctx context.Context, in *readArgs) (*api.Result, error) {
			if in.Path == "" {
				return nil, errors.New("read: path is required")
			}
			offset, err := nativetool.IntArg("read", "offset", in.Offset, 1, 1, 1<<31-1)
			if err != nil {
				return nil, err
			}
			limit, err := nativetool.IntArg("read", "limit", in.Limit, 0, 1, 1<<31-1)
			if err != nil {
				return nil, err
			}
			d, err := ws.read(ctx, in.Path, offset, limit, maxReadBytes)
			if err != nil {
				return nil, err
			}
			return nativetool.Result(readText(d), d)
		})
}

// read returns lines [offset, offset+limit) of a file (limit 0: no line bound), at most
// maxBytes of them. It streams the file once, so the total line count of a large file costs
// a scan but no memory.
func (w *workspace) read(ctx context.Context, path string, offset, limit, maxBytes int) (*readDetails, error) {
	root, p, err := w.openPath("read", path)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, _, err := openRegular("read", root, p)
	if err != nil {
		return nil, err
	}
	defer f.Close()

	var (
		content   []byte
		line      = 1 // line of the next byte
		lineStart = 0 // len(content) when the current line started
		newlines  = 0
		size      int64
		last      byte
		stopped   bool // stopped collecting before the end of the window
		cut       bool // the first collected line was cut at maxBytes
		buf       = make([]byte, 64<<10)
	)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, rerr := f.Read(buf)
		chunk := buf[:n]
		if size == 0 && n > 0 && isBinary(chunk) {
			return nil, fmt.Errorf("read: %s is a binary file", p.Show)
		}
		size += int64(n)
		if n > 0 {
			last = chunk[n-1]
		}
		for len(chunk) > 0 {
			i := bytes.IndexByte(chunk, '\n')
			seg := chunk
			if i >= 0 {
				seg = chunk[:i+1]
			}
			if !stopped && line >= offset && (limit == 0 || line < offset+limit) {
				if len(content)+len(seg) <= maxBytes {
					content = append(content, seg...)
				} else {
					stopped = true
					if line == offset {
						// A single line longer than maxBytes: return its start.
						room := maxBytes - len(content)
						content = append(content, seg[:room]...)
						content = trimPartialRune(content)
						cut = true
					} else {
						content = content[:lineStart]
					}
				}
			}
			chunk = chunk[len(seg):]
			if i >= 0 {
				newlines++
				line++
				lineStart = len(content)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return nil, pathErr("read", p.Show, rerr)
		}
	}
	total := newlines
	if size > 0 && last != '\n' {
		total++
	}
	if offset > total && offset > 1 {
		return nil, fmt.Errorf("read: offset %d is past the end of %s (%d lines)", offset, p.Show, total)
	}
	if bytes.IndexByte(content, 0) >= 0 {
		return nil, fmt.Errorf("read: %s is a binary file", p.Show)
	}
	returned := bytes.Count(content, []byte("\n"))
	if len(content) > 0 && content[len(content)-1] != '\n' {
		returned++
	}
	truncated := cut || offset+returned-1 < total
	return &readDetails{
		Path:      p.Show,
		Content:   string(content),
		Lines:     total,
		Offset:    offset,
		Truncated: truncated,
		Bytes:     size,
	}, nil
}

// readText is read's text block: the content, and a note on how to go on when truncated.
func readText(d *readDetails) string {
	if d.Lines == 0 {
		return "(" + d.Path + " is empty)"
	}
	if !d.Truncated {
		return d.Content
	}
	if !strings.HasSuffix(d.Content, "\n") {
		// Only a line longer than the byte limit ends a truncated window mid-line.
		return d.Content + fmt.Sprintf("\n[line %d of %s is longer than 1 MiB and was cut; %d lines in total, continue with offset %d]", d.Offset, d.Path, d.Lines, d.Offset+1)
	}
	end := d.Offset + strings.Count(d.Content, "\n") - 1
	return d.Content + fmt.Sprintf("[showing lines %d-%d of %d; continue with offset %d]", d.Offset, end, d.Lines, end+1)
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < utf8.RuneSelf {
			return b
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}

// ---- write ----

const writeInput = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path relative to the workspace root."},
    "content": {"type": "string", "description": "The complete new content of the file."},
    "createDirs": {"type": "boolean", "description": "Create missing parent directories (default false)."}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`

const writeOutput = `{
  "type": "object",
  "properties": {
    "path": {"type": "string"},
    "bytes": {"type": "integer", "minimum": 0, "description": "Bytes written."},
    "created": {"type": "boolean", "description": "True when the file did not exist before."}
  },
  "required": ["path", "bytes", "created"],
  "additionalProperties": false
}`

type writeArgs struct {
	Path       string  `json:"path"`
	Content    *string `json:"content"`
	CreateDirs bool    `json:"createDirs"`
}

type writeDetails struct {
	Path    string `json:"path"`
	Bytes   int    `json:"bytes"`
	Created bool   `json:"created"`
}

func writeTool(ws *workspace) *api.Tool {
	return typedTool("write", "Write file",
		"Create a file in the workspace or replace its whole content (at most 8 MiB); the file is replaced atomically. Set createDirs to create missing parent directories.",
		writeInput, writeOutput, false,
		func(ctx context.Context, in *writeArgs) (*api.Result, error) {
			if in.Path == "" {
				return nil, errors.New("write: path is required")
			}
			if in.Content == nil {
				return nil, errors.New("write: content is required")
			}
			if len(*in.Content) > maxFileBytes {
				return nil, fmt.Errorf("write: content is %d bytes (limit %d)", len(*in.Content), maxFileBytes)
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			p, err := ws.resolve("write", in.Path)
			if err != nil {
				return nil, err
			}
			if p.Rel == "." {
				return nil, errors.New("write: the path names the workspace directory itself")
			}
			root, err := ws.open("write")
			if err != nil {
				return nil, err
			}
			defer root.Close()
			fi, exists, err := statFile("write", root, p)
			if err != nil {
				return nil, err
			}
			var mode fs.FileMode
			if exists {
				mode = fi.Mode().Perm()
			} else if err := ensureParent("write", root, p, in.CreateDirs); err != nil {
				return nil, err
			}
			if err := writeAtomic(root, p.Rel, []byte(*in.Content), mode); err != nil {
				return nil, pathErr("write", p.Show, err)
			}
			d := writeDetails{Path: p.Show, Bytes: len(*in.Content), Created: !exists}
			verb := "Wrote"
			if d.Created {
				verb = "Created"
			}
			return nativetool.Result(fmt.Sprintf("%s %s (%d bytes)", verb, p.Show, d.Bytes), d)
		})
}

// ensureParent checks that the parent directory of p exists, creating it when create is set.
func ensureParent(tool string, root *os.Root, p confine.Path, create bool) error {
	dir := filepath.Dir(p.Rel)
	fi, err := root.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s: the parent of %s is not a directory", tool, p.Show)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return pathErr(tool, p.Show, err)
	}
	if !create {
		return fmt.Errorf("%s: the parent directory of %s does not exist (set createDirs to create it)", tool, p.Show)
	}
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return pathErr(tool, p.Show, err)
	}
	return nil
}

// ---- edit ----

const editInput = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path relative to the workspace root."},
    "oldText": {"type": "string", "minLength": 1, "description": "Exact text to replace; it must occur exactly once unless replaceAll is set."},
    "newText": {"type": "string", "description": "Replacement text."},
    "replaceAll": {"type": "boolean", "description": "Replace every occurrence (default false)."}
  },
  "required": ["path", "oldText", "newText"],
  "additionalProperties": false
}`

const editOutput = `{
  "type": "object",
  "properties": {
    "path": {"type": "string"},
    "replacements": {"type": "integer", "minimum": 1, "description": "Occurrences replaced."},
    "diff": {"type": "string", "description": "Unified diff of the change (cut at 64 KiB)."}
  },
  "required": ["path", "replacements", "diff"],
  "additionalProperties": false
}`

type editArgs struct {
	Path       string  `json:"path"`
	OldText    *string `json:"oldText"`
	NewText    *string `json:"newText"`
	ReplaceAll bool    `json:"replaceAll"`
}

type editDetails struct {
	Path         string `json:"path"`
	Replacements int    `json:"replacements"`
	Diff         string `json:"diff"`
}

func editTool(ws *workspace) *api.Tool {
	return typedTool("edit", "Edit file",
		"Replace an exact piece of text in a workspace file. oldText must occur exactly once (include enough surrounding lines to make it unique) unless replaceAll is set; the result includes a unified diff.",
		editInput, editOutput, false,
		func(ctx context.Context, in *editArgs) (*api.Result, error) {
			switch {
			case in.Path == "":
				return nil, errors.New("edit: path is required")
			case in.OldText == nil || *in.OldText == "":
				return nil, errors.New("edit: oldText is required and must not be empty")
			case in.NewText == nil:
				return nil, errors.New("edit: newText is required")
			case *in.OldText == *in.NewText:
				return nil, errors.New("edit: oldText and newText are identical")
			}
			d, err := ws.edit(ctx, in.Path, *in.OldText, *in.NewText, in.ReplaceAll)
			if err != nil {
				return nil, err
			}
			return nativetool.Result(fmt.Sprintf("Edited %s (%d replacement%s)\n%s", d.Path, d.Replacements, plural(d.Replacements), d.Diff), d)
		})
}

func (w *workspace) edit(ctx context.Context, path, oldText, newText string, all bool) (*editDetails, error) {
	root, p, err := w.openPath("edit", path)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	data, fi, err := readSmallFile("edit", root, p, maxFileBytes)
	if err != nil {
		return nil, err
	}
	old := string(data)
	n := strings.Count(old, oldText)
	if n == 0 && strings.Contains(old, "\r\n") && strings.Contains(oldText, "\n") && !strings.Contains(oldText, "\r") {
		// The file uses CRLF line endings and the caller wrote LF: match in the file's style.
		crlf := strings.ReplaceAll(oldText, "\n", "\r\n")
		if m := strings.Count(old, crlf); m > 0 {
			oldText, newText, n = crlf, strings.ReplaceAll(newText, "\n", "\r\n"), m
		}
	}
	switch {
	case n == 0:
		return nil, fmt.Errorf("edit: oldText was not found in %s (it must match exactly, including whitespace and indentation)", p.Show)
	case n > 1 && !all:
		return nil, fmt.Errorf("edit: oldText occurs %d times in %s (at lines %s); include more surrounding text to make it unique, or set replaceAll", n, p.Show, matchLines(old, oldText, 10))
	}
	var updated string
	if all {
		updated = strings.ReplaceAll(old, oldText, newText)
	} else {
		updated = strings.Replace(old, oldText, newText, 1)
	}
	if len(updated) > maxFileBytes {
		return nil, fmt.Errorf("edit: the edited %s would be %d bytes (limit %d)", p.Show, len(updated), maxFileBytes)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := writeAtomic(root, p.Rel, []byte(updated), fi.Mode().Perm()); err != nil {
		return nil, pathErr("edit", p.Show, err)
	}
	diff, _ := unifiedDiff(p.Show, p.Show, old, updated, maxDiffBytes)
	return &editDetails{Path: p.Show, Replacements: n, Diff: diff}, nil
}

// matchLines lists the 1-based lines where sub starts in s, at most max of them.
func matchLines(s, sub string, max int) string {
	var out []string
	line, pos := 1, 0
	for len(out) < max {
		i := strings.Index(s[pos:], sub)
		if i < 0 {
			break
		}
		line += strings.Count(s[pos:pos+i], "\n")
		out = append(out, strconv.Itoa(line))
		line += strings.Count(sub, "\n")
		pos += i + len(sub)
	}
	if strings.Contains(s[pos:], sub) {
		out = append(out, "…")
	}
	return strings.Join(out, ", ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// ---- ls ----

const (
	lsMaxEntries = 1000   // entries returned
	lsMaxScan    = 100000 // entries read from one directory
)

const lsInput = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Directory relative to the workspace root (default: the root)."},
    "all": {"type": "boolean", "description": "Include entries whose names start with a dot (default false)."}
  },
  "additionalProperties": false
}`

const lsOutput = `{
  "type": "object",
  "properties": {
    "path": {"type": "string"},
    "entries": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {
          "name": {"type": "string"},
          "type": {"enum": ["file", "dir", "symlink", "other"]},
          "size": {"type": "integer", "minimum": 0, "description": "Bytes, for files; 0 otherwise."}
        },
        "required": ["name", "type", "size"],
        "additionalProperties": false
      }
    },
    "truncated": {"type": "boolean", "description": "True when the directory has more entries than were returned (at most 1000)."}
  },
  "required": ["path", "entries", "truncated"],
  "additionalProperties": false
}`

type lsArgs struct {
	Path string `json:"path"`
	All  bool   `json:"all"`
}

type lsEntry struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Size int64  `json:"size"`
}

type lsDetails struct {
	Path      string    `json:"path"`
	Entries   []lsEntry `json:"entries"`
	Truncated bool      `json:"truncated"`
}

func lsTool(ws *workspace) *api.Tool {
	return nativetool.Rendered(coreSpec("ls", "List directory",
		"List a workspace directory, sorted by name, with each entry's type and size. Names starting with a dot are hidden unless all is set.",
		lsInput, lsOutput, true),
		ws.ls, lsText)
}

func (w *workspace) ls(ctx context.Context, in *lsArgs) (*lsDetails, error) {
	root, p, err := w.openPath("ls", in.Path)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.Open(p.Rel)
	if err != nil {
		return nil, pathErr("ls", p.Show, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, pathErr("ls", p.Show, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("ls: %s is not a directory", p.Show)
	}
	entries, more, err := readDirBounded(ctx, f, lsMaxScan)
	if err != nil {
		return nil, pathErr("ls", p.Show, err)
	}
	if !in.All {
		entries = slices.DeleteFunc(entries, func(e fs.DirEntry) bool { return strings.HasPrefix(e.Name(), ".") })
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	d := &lsDetails{Path: p.Show, Entries: []lsEntry{}, Truncated: more}
	if len(entries) > lsMaxEntries {
		entries, d.Truncated = entries[:lsMaxEntries], true
	}
	for _, e := range entries {
		le := lsEntry{Name: e.Name(), Type: entryType(e.Type())}
		if le.Type == "file" {
			if info, err := e.Info(); err == nil {
				le.Size = info.Size()
			}
		}
		d.Entries = append(d.Entries, le)
	}
	return d, nil
}

// readDirBounded reads at most max entries of an open directory; more reports that there were
// more.
func readDirBounded(ctx context.Context, f *os.File, max int) (entries []fs.DirEntry, more bool, err error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		batch, err := f.ReadDir(1024)
		entries = append(entries, batch...)
		if len(entries) > max {
			return entries[:max], true, nil
		}
		if err == io.EOF || (err == nil && len(batch) == 0) {
			return entries, false, nil
		}
		if err != nil {
			return nil, false, err
		}
	}
}

func entryType(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "dir"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m.IsRegular():
		return "file"
	default:
		return "other"
	}
}

func lsText(d *lsDetails) string {
	if len(d.Entries) == 0 {
		return "(" + d.Path + " is empty)"
	}
	var b strings.Builder
	for _, e := range d.Entries {
		b.WriteString(e.Name)
		switch e.Type {
		case "dir":
			b.WriteString("/")
		case "symlink":
			b.WriteString("@")
		case "file":
			b.WriteString("  ")
			b.WriteString(strconv.FormatInt(e.Size, 10))
		}
		b.WriteByte('\n')
	}
	if d.Truncated {
		fmt.Fprintf(&b, "[only the first %d entries are listed]\n", len(d.Entries))
	}
	return b.String()
}
