package builtin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/confine"
	"github.com/codemode-go/codemode/internal/nativetool"
	"github.com/codemode-go/codemode/internal/textcut"
)

const (
	walkMaxVisit    = 200_000  // directory entries one find or grep looks at
	walkMaxDepth    = 64       // directory levels below the start
	walkMaxDirScan  = 100_000  // entries read from one directory
	grepMaxFile     = 16 << 20 // larger files are skipped
	grepMaxLineText = 500      // bytes of a matching line returned
	maxGlobBytes    = 1024
	maxGlobAlts     = 64 // patterns one {a,b} expansion may produce
)

// ---- globs ----

// globMatcher matches slash-separated relative paths. A pattern without "/" matches a file name
// at any depth; a pattern with "/" matches the whole path relative to the search directory. "**"
// as a whole segment matches any number of directories, and {a,b} alternatives are expanded.
// Within a segment, path.Match syntax applies (*, ?, [...]).
type globMatcher struct {
	alts [][]string // segment lists, one per expanded alternative
}

func compileGlob(pattern string) (*globMatcher, error) {
	if pattern == "" {
		return nil, errors.New("empty pattern")
	}
	if len(pattern) > maxGlobBytes {
		return nil, fmt.Errorf("pattern is %d bytes (limit %d)", len(pattern), maxGlobBytes)
	}
	if strings.IndexByte(pattern, 0) >= 0 {
		return nil, errors.New("pattern contains a NUL byte")
	}
	expanded, err := expandBraces(pattern)
	if err != nil {
		return nil, err
	}
	g := &globMatcher{}
	for _, p := range expanded {
		p = strings.TrimPrefix(p, "./")
		var segs []string
		if !strings.Contains(p, "/") {
			segs = []string{"**", p}
		} else {
			if strings.HasPrefix(p, "/") {
				return nil, fmt.Errorf("pattern %q is absolute; patterns are relative to the search path", p)
			}
			for s := range strings.SplitSeq(p, "/") {
				switch {
				case s == "" || s == ".":
					continue
				case s == "..":
					return nil, fmt.Errorf("pattern %q has a .. segment", p)
				case s == "**" && len(segs) > 0 && segs[len(segs)-1] == "**":
					continue
				}
				segs = append(segs, s)
			}
		}
		for _, s := range segs {
			if s == "**" {
				continue
			}
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("malformed pattern %q", p)
			}
		}
		if len(segs) == 0 {
			return nil, fmt.Errorf("pattern %q matches nothing", pattern)
		}
		g.alts = append(g.alts, segs)
	}
	return g, nil
}

// expandBraces expands {a,b} groups (nested allowed), up to maxGlobAlts results.
func expandBraces(p string) ([]string, error) {
	open := -1
	depth := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '[':
			// Skip a character class; a brace inside it is literal.
			if j := strings.IndexByte(p[i+1:], ']'); j >= 0 {
				i += j + 1
			}
		case '{':
			if depth == 0 {
				open = i
			}
			depth++
		case '}':
			if depth == 0 {
				continue
			}
			depth--
			if depth > 0 {
				continue
			}
			var out []string
			for _, alt := range splitTopLevel(p[open+1 : i]) {
				more, err := expandBraces(p[:open] + alt + p[i+1:])
				if err != nil {
					return nil, err
				}
				out = append(out, more...)
				if len(out) > maxGlobAlts {
					return nil, fmt.Errorf("pattern expands to more than %d alternatives", maxGlobAlts)
				}
			}
			return out, nil
		}
	}
	if depth != 0 {
		return nil, errors.New("unbalanced { in pattern")
	}
	return []string{p}, nil
}

// splitTopLevel splits s at commas outside nested braces.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// states runs the segment automaton of one alternative over segs and returns the set of
// pattern positions reachable afterwards (position len(pat) means "matched so far entirely").
func globStates(pat, segs []string) []bool {
	cur := make([]bool, len(pat)+1)
	cur[0] = true
	closeStars(pat, cur)
	next := make([]bool, len(pat)+1)
	for _, s := range segs {
		clear(next)
		alive := false
		for i, on := range cur {
			if !on || i == len(pat) {
				continue
			}
			if pat[i] == "**" {
				next[i] = true
				alive = true
			} else if ok, _ := path.Match(pat[i], s); ok {
				next[i+1] = true
				alive = true
			}
		}
		if !alive {
			return nil
		}
		closeStars(pat, next)
		cur, next = next, cur
	}
	return cur
}

// closeStars adds the positions after "**" segments (which may match nothing).
func closeStars(pat []string, st []bool) {
	for i := 0; i < len(pat); i++ {
		if st[i] && pat[i] == "**" {
			st[i+1] = true
		}
	}
}

// match reports whether the relative slash path p matches.
func (g *globMatcher) match(p string) bool {
	segs := strings.Split(p, "/")
	for _, pat := range g.alts {
		if st := globStates(pat, segs); st != nil && st[len(pat)] {
			return true
		}
	}
	return false
}

// descend reports whether anything below directory dir can match.
func (g *globMatcher) descend(dir string) bool {
	segs := strings.Split(dir, "/")
	for _, pat := range g.alts {
		st := globStates(pat, segs)
		for i := 0; i < len(st)-1; i++ {
			if st[i] {
				return true
			}
		}
	}
	return false
}

// ---- walking ----

// walkFunc sees one entry; rel is slash-separated and relative to the walk's start. Returning
// skipDir for a directory skips it; stopWalk ends the walk.
type walkFunc func(rel string, d fs.DirEntry) error

var (
	errSkipDir  = errors.New("skip directory")
	errStopWalk = errors.New("stop walk")
)

// walk visits the tree below start (an OS-form path relative to root) depth first in name
// order, never following symlinks and skipping .git directories. It stops after walkMaxVisit
// entries; truncated then reports that entries were left unvisited. Directories that cannot be
// read are skipped.
func walk(ctx context.Context, root *os.Root, start string, fn walkFunc) (truncated bool, err error) {
	visited := 0
	var rec func(dir, rel string, depth int) error
	rec = func(dir, rel string, depth int) error {
		f, err := root.Open(dir)
		if err != nil {
			return nil
		}
		entries, more, err := readDirBounded(ctx, f, walkMaxDirScan)
		f.Close()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return nil
		}
		if more {
			truncated = true
		}
		slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
		for _, e := range entries {
			visited++
			if visited > walkMaxVisit {
				truncated = true
				return errStopWalk
			}
			if visited%256 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			name := e.Name()
			childRel := name
			if rel != "" {
				childRel = rel + "/" + name
			}
			if e.IsDir() && name == ".git" {
				continue
			}
			err := fn(childRel, e)
			if err == errSkipDir {
				continue
			}
			if err != nil {
				return err
			}
			if e.IsDir() {
				if depth+1 > walkMaxDepth {
					truncated = true
					continue
				}
				if err := rec(filepath.Join(dir, name), childRel, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	err = rec(start, "", 0)
	if err == errStopWalk {
		err = nil
	}
	return truncated, err
}

// walkMatching walks the tree below start like walk, but hands fn only the entries that are
// not directories and match g (all of them when g is nil), and skips the directories below
// which nothing can match.
func walkMatching(ctx context.Context, root *os.Root, start string, g *globMatcher, fn walkFunc) (truncated bool, err error) {
	return walk(ctx, root, start, func(rel string, e fs.DirEntry) error {
		if e.IsDir() {
			if g != nil && !g.descend(rel) {
				return errSkipDir
			}
			return nil
		}
		if g != nil && !g.match(rel) {
			return nil
		}
		return fn(rel, e)
	})
}

// ---- find ----

const findInput = `{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "Glob. Without a slash it matches file names at any depth (\"*.go\"); with one it matches paths relative to path (\"src/**/*.ts\"). ** spans directories; {a,b} gives alternatives."},
    "path": {"type": "string", "description": "Directory to search, relative to the workspace root (default: the root)."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 10000, "description": "Most matches returned (default 1000)."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`

const findOutput = `{
  "type": "object",
  "properties": {
    "matches": {"type": "array", "items": {"type": "string"}, "description": "Matching file paths relative to the workspace root, sorted."},
    "truncated": {"type": "boolean", "description": "True when the limit or the search bound was reached."}
  },
  "required": ["matches", "truncated"],
  "additionalProperties": false
}`

type findArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
	Limit   *int   `json:"limit"`
}

type findDetails struct {
	Matches   []string `json:"matches"`
	Truncated bool     `json:"truncated"`
}

func findTool(ws *workspace) *api.Tool {
	return typedTool("find", "Find files",
		"Find files in the workspace whose paths match a glob: a pattern without a slash matches file names at any depth, ** spans directories and {a,b} lists alternatives. .git directories are skipped and symlinks are not followed.",
		findInput, findOutput, true,
		func(ctx context.Context, in *findArgs) (*api.Result, error) {
			if in.Pattern == "" {
				return nil, errors.New("find: pattern is required")
			}
			limit, err := nativetool.IntArg("find", "limit", in.Limit, 1000, 1, 10000)
			if err != nil {
				return nil, err
			}
			d, err := ws.find(ctx, in.Pattern, in.Path, limit)
			if err != nil {
				return nil, err
			}
			text := strings.Join(d.Matches, "\n")
			if len(d.Matches) == 0 {
				text = "no files match " + in.Pattern
			}
			if d.Truncated {
				text += "\n[results truncated]"
			}
			return nativetool.Result(text, d)
		})
}

func (w *workspace) find(ctx context.Context, pattern, dir string, limit int) (*findDetails, error) {
	g, err := compileGlob(pattern)
	if err != nil {
		return nil, fmt.Errorf("find: %v", err)
	}
	root, p, err := w.openPath("find", dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if err := requireDir("find", root, p); err != nil {
		return nil, err
	}
	d := &findDetails{Matches: []string{}}
	truncated, err := walkMatching(ctx, root, p.Rel, g, func(rel string, _ fs.DirEntry) error {
		if len(d.Matches) == limit {
			d.Truncated = true
			return errStopWalk
		}
		d.Matches = append(d.Matches, joinShow(p.Show, rel))
		return nil
	})
	if err != nil {
		return nil, err
	}
	d.Truncated = d.Truncated || truncated
	return d, nil
}

// requireDir checks that p is a directory.
func requireDir(tool string, root *os.Root, p confine.Path) error {
	fi, err := root.Stat(p.Rel)
	if err != nil {
		return pathErr(tool, p.Show, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s: %s is not a directory", tool, p.Show)
	}
	return nil
}

// ---- grep ----

const grepInput = `{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "Regular expression (Go RE2 syntax), matched against each line."},
    "path": {"type": "string", "description": "File or directory to search, relative to the workspace root (default: the root)."},
    "glob": {"type": "string", "description": "Only search files matching this glob (same syntax as find, e.g. \"*.go\")."},
    "ignoreCase": {"type": "boolean", "description": "Match case-insensitively (default false)."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 2000, "description": "Most matching lines returned (default 100)."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`

const grepOutput = `{
  "type": "object",
  "properties": {
    "matches": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {
          "path": {"type": "string"},
          "line": {"type": "integer", "minimum": 1},
          "text": {"type": "string", "description": "The matching line (cut at 500 bytes)."}
        },
        "required": ["path", "line", "text"],
        "additionalProperties": false
      }
    },
    "truncated": {"type": "boolean", "description": "True when the limit or the search bound was reached."}
  },
  "required": ["matches", "truncated"],
  "additionalProperties": false
}`

type grepArgs struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path"`
	Glob       string `json:"glob"`
	IgnoreCase bool   `json:"ignoreCase"`
	Limit      *int   `json:"limit"`
}

type grepMatch struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

type grepDetails struct {
	Matches   []grepMatch `json:"matches"`
	Truncated bool        `json:"truncated"`
}

func grepTool(ws *workspace) *api.Tool {
	return typedTool("grep", "Search file contents",
		"Search the lines of workspace files for a regular expression (Go RE2 syntax), optionally only in files matching a glob. Binary files, files over 16 MiB and .git directories are skipped.",
		grepInput, grepOutput, true,
		func(ctx context.Context, in *grepArgs) (*api.Result, error) {
			if in.Pattern == "" {
				return nil, errors.New("grep: pattern is required")
			}
			limit, err := nativetool.IntArg("grep", "limit", in.Limit, 100, 1, 2000)
			if err != nil {
				return nil, err
			}
			d, err := ws.grep(ctx, in, limit)
			if err != nil {
				return nil, err
			}
			var b strings.Builder
			for _, m := range d.Matches {
				fmt.Fprintf(&b, "%s:%d: %s\n", m.Path, m.Line, m.Text)
			}
			if len(d.Matches) == 0 {
				b.WriteString("no matches\n")
			}
			if d.Truncated {
				b.WriteString("[results truncated]\n")
			}
			return nativetool.Result(b.String(), d)
		})
}

func (w *workspace) grep(ctx context.Context, in *grepArgs, limit int) (*grepDetails, error) {
	if len(in.Pattern) > 4096 {
		return nil, fmt.Errorf("grep: pattern is %d bytes (limit 4096)", len(in.Pattern))
	}
	expr := in.Pattern
	if in.IgnoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("grep: invalid regular expression: %v", err)
	}
	// Whole-file prefilter: with (?m), ^ matches at line starts, so any line that matches re
	// also matches in the file, and files without a match are skipped fast. \A, \z, $ (which
	// would not match before the "\r" of a CRLF line) and flag groups (which could turn m off)
	// disable it.
	var pre *regexp.Regexp
	if !strings.ContainsAny(in.Pattern, "$") && !strings.Contains(in.Pattern, `\A`) && !strings.Contains(in.Pattern, `\z`) && !strings.Contains(in.Pattern, "(?") {
		pre, _ = regexp.Compile("(?m)" + expr)
	}
	var g *globMatcher
	if in.Glob != "" {
		if g, err = compileGlob(in.Glob); err != nil {
			return nil, fmt.Errorf("grep: glob: %v", err)
		}
	}
	root, p, err := w.openPath("grep", in.Path)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	fi, err := root.Stat(p.Rel)
	if err != nil {
		return nil, pathErr("grep", p.Show, err)
	}
	d := &grepDetails{Matches: []grepMatch{}}
	search := func(rel, show string) error {
		data, ok := readGrepFile(root, rel)
		if !ok {
			return nil
		}
		if pre != nil && !pre.Match(data) {
			return nil
		}
		n := 0
		for len(data) > 0 {
			n++
			line := data
			if i := bytes.IndexByte(data, '\n'); i >= 0 {
				line, data = data[:i], data[i+1:]
			} else {
				data = nil
			}
			if n%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			line = bytes.TrimSuffix(line, []byte("\r"))
			if !re.Match(line) {
				continue
			}
			if len(d.Matches) == limit {
				d.Truncated = true
				return errStopWalk
			}
			d.Matches = append(d.Matches, grepMatch{Path: show, Line: n, Text: lineText(line)})
		}
		return nil
	}
	if !fi.IsDir() {
		if err := search(p.Rel, p.Show); err != nil && err != errStopWalk {
			return nil, err
		}
		return d, nil
	}
	truncated, err := walkMatching(ctx, root, p.Rel, g, func(rel string, e fs.DirEntry) error {
		if !e.Type().IsRegular() {
			return nil
		}
		return search(filepath.Join(p.Rel, filepath.FromSlash(rel)), joinShow(p.Show, rel))
	})
	if err != nil {
		return nil, err
	}
	d.Truncated = d.Truncated || truncated
	return d, nil
}

// readGrepFile reads a regular text file for grep (readSmallFile's checks, at most grepMaxFile
// bytes); ok is false for files to skip (unreadable, not regular, too large or binary).
func readGrepFile(root *os.Root, rel string) ([]byte, bool) {
	data, _, err := readSmallFile("grep", root, confine.Path{Rel: rel}, grepMaxFile)
	return data, err == nil
}

// lineText returns a matching line for the result, cut at grepMaxLineText bytes on a rune
// boundary.
func lineText(line []byte) string {
	if len(line) <= grepMaxLineText {
		return string(line)
	}
	return string(textcut.Prefix(line, grepMaxLineText)) + "…"
}
