package builtin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// patch.go parses unified diffs (plain `diff -u` and `git diff` output) and applies them to
// file contents in memory. It does no I/O: apply_patch reads the files, applies every file's
// hunks here, and writes only when all of them applied.

const (
	maxPatchBytes = 4 << 20 // one patch
	maxPatchFiles = 1000    // file sections in one patch
	maxHunkStart  = 1 << 30 // line numbers in hunk headers
	// maxMatchWork bounds the line comparisons spent searching for hunks in one file, so a
	// hostile patch against a large file of identical lines cannot spin.
	maxMatchWork = 50_000_000
)

// filePatch is the change to one file.
type filePatch struct {
	OldPath string // "" for /dev/null (a new file)
	NewPath string // "" for /dev/null (a deleted file)
	Hunks   []hunk
	// ExecMode is set by git's "new file mode 100755".
	ExecMode bool
	// Line is the patch line (1-based) where the section starts, for errors.
	Line int
}

// Path is the file the section changes: the new path, or the old one for a deletion.
func (f *filePatch) Path() string {
	if f.NewPath != "" {
		return f.NewPath
	}
	return f.OldPath
}

// Action is "add", "update" or "delete".
func (f *filePatch) Action() string {
	switch {
	case f.OldPath == "":
		return "add"
	case f.NewPath == "":
		return "delete"
	default:
		return "update"
	}
}

// hunk is one @@ block. Lines hold their text including "\n", except a last line of a side that
// a "\ No newline at end of file" marker followed.
type hunk struct {
	OldStart, OldLines int
	NewStart, NewLines int
	Section            string // text after the closing @@, if any
	Lines              []hunkLine
	Line               int // patch line of the @@ header
}

type hunkLine struct {
	Op   byte // ' ', '-' or '+'
	Text string
}

// header renders the hunk's @@ line.
func (h *hunk) header() string {
	return fmt.Sprintf("@@ -%s +%s @@", hunkRange(h.OldStart, h.OldLines), hunkRange(h.NewStart, h.NewLines))
}

// sides returns the hunk's old lines (context and deletions) and new lines (context and
// additions).
func (h *hunk) sides() (old, new []string) {
	for _, l := range h.Lines {
		if l.Op != '+' {
			old = append(old, l.Text)
		}
		if l.Op != '-' {
			new = append(new, l.Text)
		}
	}
	return old, new
}

// patchError is an error at a line of the patch.
func patchError(line int, format string, args ...any) error {
	return fmt.Errorf("patch line %d: %s", line, fmt.Sprintf(format, args...))
}

// parsePatch parses a unified diff with one or more file sections. Text before, between and
// after sections (commit messages, "Index:" lines, git's extended headers) is skipped, but a
// hunk whose line counts disagree with its body is an error rather than something to guess
// about. Git binary patches, renames and copies are refused.
func parsePatch(text string) ([]*filePatch, error) {
	if len(text) > maxPatchBytes {
		return nil, fmt.Errorf("the patch is %d bytes (limit %d)", len(text), maxPatchBytes)
	}
	lines := strings.Split(text, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	p := &patchParser{lines: lines}
	return p.parse()
}

type patchParser struct {
	lines []string
	i     int
	files []*filePatch
	git   *gitHeader // the current "diff --git" section, until its ---/+++ or the next section
}

// gitHeader is what a "diff --git" line and its extended headers say.
type gitHeader struct {
	line            int
	path            string // from "diff --git a/X b/X", when it can be read unambiguously
	newFile         bool
	deletedFile     bool
	execMode        bool
	sawFileHeaders  bool
	unsupportedWhat string
}

func trimCR(s string) string { return strings.TrimSuffix(s, "\r") }

func (p *patchParser) parse() ([]*filePatch, error) {
	for p.i < len(p.lines) {
		line := trimCR(p.lines[p.i])
		switch {
		case strings.HasPrefix(line, "diff --git "):
			if err := p.flushGit(); err != nil {
				return nil, err
			}
			p.git = &gitHeader{line: p.i + 1, path: gitPath(line[len("diff --git "):])}
			p.i++
		case p.git != nil && gitExtended(line, p.git):
			p.i++
		case strings.HasPrefix(line, "GIT binary patch") || strings.HasPrefix(line, "Binary files "):
			return nil, patchError(p.i+1, "binary patches are not supported")
		case strings.HasPrefix(line, "--- ") && p.i+1 < len(p.lines) && strings.HasPrefix(p.lines[p.i+1], "+++ "):
			if err := p.parseFile(); err != nil {
				return nil, err
			}
		case strings.HasPrefix(line, "@@ "):
			return nil, patchError(p.i+1, "hunk without a file header (--- and +++ lines)")
		default:
			p.i++
		}
		if len(p.files) > maxPatchFiles {
			return nil, fmt.Errorf("the patch changes more than %d files", maxPatchFiles)
		}
	}
	if err := p.flushGit(); err != nil {
		return nil, err
	}
	if len(p.files) == 0 {
		return nil, errors.New("no file changes found (expected unified diff sections with --- / +++ headers and @@ hunks)")
	}
	return p.files, nil
}

// gitExtended consumes one of git's extended header lines into h.
func gitExtended(line string, h *gitHeader) bool {
	switch {
	case strings.HasPrefix(line, "new file mode "):
		h.newFile = true
		h.execMode = strings.HasSuffix(line, "755")
	case strings.HasPrefix(line, "deleted file mode "):
		h.deletedFile = true
	case strings.HasPrefix(line, "index "), strings.HasPrefix(line, "similarity index "),
		strings.HasPrefix(line, "dissimilarity index "):
	case strings.HasPrefix(line, "old mode "), strings.HasPrefix(line, "new mode "):
		if h.unsupportedWhat == "" {
			h.unsupportedWhat = "mode changes"
		}
	case strings.HasPrefix(line, "rename from "), strings.HasPrefix(line, "rename to "):
		h.unsupportedWhat = "renames"
	case strings.HasPrefix(line, "copy from "), strings.HasPrefix(line, "copy to "):
		h.unsupportedWhat = "copies"
	default:
		return false
	}
	return true
}

// flushGit ends a "diff --git" section. A section without ---/+++ headers is a new or deleted
// empty file (or a mode change, rename or copy, which are refused).
func (p *patchParser) flushGit() error {
	h := p.git
	p.git = nil
	if h == nil || h.sawFileHeaders {
		return nil
	}
	if h.unsupportedWhat == "renames" || h.unsupportedWhat == "copies" {
		return patchError(h.line, "%s are not supported", h.unsupportedWhat)
	}
	if !h.newFile && !h.deletedFile {
		if h.unsupportedWhat != "" {
			return patchError(h.line, "%s are not supported", h.unsupportedWhat)
		}
		return patchError(h.line, "diff --git section without changes")
	}
	if h.path == "" {
		return patchError(h.line, "cannot read the file name of this diff --git line")
	}
	f := &filePatch{Line: h.line, ExecMode: h.execMode}
	if h.newFile {
		f.NewPath = h.path
	} else {
		f.OldPath = h.path
	}
	p.files = append(p.files, f)
	return nil
}

// gitPath reads "a/X b/X" (the same X twice, possibly quoted) and returns X, or "".
func gitPath(s string) string {
	s = trimCR(s)
	if strings.HasPrefix(s, `"`) {
		a, rest, ok := unquoteC(s)
		if !ok || !strings.HasPrefix(rest, " ") {
			return ""
		}
		b, rest, ok := unquoteC(strings.TrimPrefix(rest, " "))
		if !ok || rest != "" || !strings.HasPrefix(a, "a/") || !strings.HasPrefix(b, "b/") || a[2:] != b[2:] {
			return ""
		}
		return a[2:]
	}
	if len(s)%2 == 0 {
		return ""
	}
	half := len(s) / 2
	a, b := s[:half], s[half+1:]
	if s[half] != ' ' || !strings.HasPrefix(a, "a/") || !strings.HasPrefix(b, "b/") || a[2:] != b[2:] {
		return ""
	}
	return a[2:]
}

// parseFile parses a ---/+++ header pair and the hunks after it.
func (p *patchParser) parseFile() error {
	start := p.i + 1
	oldName, err := headerPath(trimCR(p.lines[p.i])[4:])
	if err != nil {
		return patchError(start, "%v", err)
	}
	newName, err := headerPath(trimCR(p.lines[p.i+1])[4:])
	if err != nil {
		return patchError(start+1, "%v", err)
	}
	f := &filePatch{Line: start}
	if p.git != nil {
		p.git.sawFileHeaders = true
		if p.git.unsupportedWhat == "renames" || p.git.unsupportedWhat == "copies" {
			return patchError(p.git.line, "%s are not supported", p.git.unsupportedWhat)
		}
		f.ExecMode = p.git.execMode
		f.Line = p.git.line
		p.git = nil // its headers belong to this section only
	}
	f.OldPath, f.NewPath = stripPrefixes(oldName, newName)
	switch {
	case f.OldPath == "" && f.NewPath == "":
		return patchError(start, "both file names are /dev/null")
	case f.OldPath != "" && f.NewPath != "" && f.OldPath != f.NewPath:
		return patchError(start, "the old and new file names differ (%s, %s); renames are not supported", f.OldPath, f.NewPath)
	}
	p.i += 2
	for p.i < len(p.lines) && strings.HasPrefix(p.lines[p.i], "@@") {
		h, err := p.parseHunk()
		if err != nil {
			return err
		}
		f.Hunks = append(f.Hunks, *h)
	}
	if len(f.Hunks) == 0 {
		return patchError(start, "no hunks for %s", f.Path())
	}
	if p.i < len(p.lines) {
		// A hunk body line right after the last hunk means the counts in its header are wrong;
		// dropping the line silently would apply a different change than the one written.
		next := p.lines[p.i]
		isHeader := strings.HasPrefix(next, "--- ") && p.i+1 < len(p.lines) && strings.HasPrefix(p.lines[p.i+1], "+++ ")
		if !isHeader && trimCR(next) != "-- " && next != "" && strings.ContainsRune(" +-", rune(next[0])) {
			h := f.Hunks[len(f.Hunks)-1]
			return patchError(p.i+1, "line after hunk %s of %s looks like part of it; the line counts in the hunk header do not match its body", h.header(), f.Path())
		}
	}
	for i := range f.Hunks {
		h := &f.Hunks[i]
		if f.OldPath == "" && h.OldLines != 0 {
			return patchError(h.Line, "hunk %s of new file %s has old lines", h.header(), f.Path())
		}
		if f.NewPath == "" && h.NewLines != 0 {
			return patchError(h.Line, "hunk %s of deleted file %s has new lines", h.header(), f.Path())
		}
	}
	p.files = append(p.files, f)
	return nil
}

// headerPath reads the file name of a --- or +++ line: an optional C-quoted name, otherwise
// everything up to a tab (which starts a timestamp). "" means /dev/null.
func headerPath(s string) (string, error) {
	var name string
	if strings.HasPrefix(s, `"`) {
		n, _, ok := unquoteC(s)
		if !ok {
			return "", errors.New("malformed quoted file name")
		}
		name = n
	} else {
		name, _, _ = strings.Cut(s, "\t")
		name = strings.TrimRight(name, " ")
	}
	if name == "" {
		return "", errors.New("missing file name")
	}
	if name == "/dev/null" {
		return "", nil
	}
	if strings.IndexByte(name, 0) >= 0 {
		return "", errors.New("file name contains a NUL byte")
	}
	return name, nil
}

// stripPrefixes removes git's a/ and b/ prefixes when the names use them.
func stripPrefixes(oldName, newName string) (string, string) {
	oa := strings.HasPrefix(oldName, "a/")
	nb := strings.HasPrefix(newName, "b/")
	switch {
	case oa && nb, oa && newName == "", oldName == "" && nb:
		return strings.TrimPrefix(oldName, "a/"), strings.TrimPrefix(newName, "b/")
	}
	return oldName, newName
}

// quoteName writes a file name for a --- or +++ line, C-quoted the way git does when it has
// characters that would otherwise be misread (tab, newline, quotes, backslash, control
// characters, or spaces at its end).
func quoteName(name string) string {
	needs := strings.HasSuffix(name, " ") || strings.HasPrefix(name, `"`)
	for i := 0; i < len(name) && !needs; i++ {
		c := name[i]
		needs = c < 0x20 || c == 0x7f || c == '"' || c == '\\'
	}
	if !needs {
		return name
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(name); i++ {
		switch c := name[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if c < 0x20 || c == 0x7f {
				fmt.Fprintf(&b, "\\%03o", c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// unquoteC reads a double-quoted name with git's C-style escapes from the start of s and
// returns it and the rest of s.
func unquoteC(s string) (name, rest string, ok bool) {
	if !strings.HasPrefix(s, `"`) {
		return "", s, false
	}
	var b []byte
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			return string(b), s[i+1:], true
		case '\\':
			i++
			if i >= len(s) {
				return "", s, false
			}
			switch e := s[i]; e {
			case 'n':
				b = append(b, '\n')
			case 't':
				b = append(b, '\t')
			case 'r':
				b = append(b, '\r')
			case 'a':
				b = append(b, 7)
			case 'b':
				b = append(b, 8)
			case 'f':
				b = append(b, 12)
			case 'v':
				b = append(b, 11)
			case '"', '\\':
				b = append(b, e)
			case '0', '1', '2', '3':
				if i+2 >= len(s) {
					return "", s, false
				}
				v, err := strconv.ParseUint(s[i:i+3], 8, 8)
				if err != nil {
					return "", s, false
				}
				b = append(b, byte(v))
				i += 2
			default:
				return "", s, false
			}
		default:
			b = append(b, c)
		}
	}
	return "", s, false
}

// parseHunk parses an @@ header and its body.
func (p *patchParser) parseHunk() (*hunk, error) {
	ln := p.i + 1
	h, err := parseHunkHeader(trimCR(p.lines[p.i]))
	if err != nil {
		return nil, patchError(ln, "%v", err)
	}
	h.Line = ln
	p.i++
	oldLeft, newLeft := h.OldLines, h.NewLines
	oldEOF, newEOF := false, false // a side ended with "\ No newline at end of file"
	for oldLeft > 0 || newLeft > 0 {
		if p.i >= len(p.lines) {
			return nil, patchError(ln, "hunk %s ends early: %d old and %d new lines missing", h.header(), oldLeft, newLeft)
		}
		raw := p.lines[p.i]
		var op byte
		var text string
		switch {
		case raw == "" || raw == "\r":
			// An empty line: a context line whose single space was stripped by an editor.
			op, text = ' ', raw
		case raw[0] == ' ' || raw[0] == '-' || raw[0] == '+':
			op, text = raw[0], raw[1:]
		case raw[0] == '\\':
			return nil, patchError(p.i+1, "\"\\ No newline at end of file\" must follow a hunk line")
		default:
			return nil, patchError(p.i+1, "hunk %s ends early: %d old and %d new lines missing (unexpected line %q)", h.header(), oldLeft, newLeft, clip(raw, 60))
		}
		if op != '+' {
			if oldLeft == 0 {
				return nil, patchError(p.i+1, "hunk %s has more old lines than its header says (%d)", h.header(), h.OldLines)
			}
			if oldEOF {
				return nil, patchError(p.i+1, "hunk %s continues after \"\\ No newline at end of file\"", h.header())
			}
			oldLeft--
		}
		if op != '-' {
			if newLeft == 0 {
				return nil, patchError(p.i+1, "hunk %s has more new lines than its header says (%d)", h.header(), h.NewLines)
			}
			if newEOF {
				return nil, patchError(p.i+1, "hunk %s continues after \"\\ No newline at end of file\"", h.header())
			}
			newLeft--
		}
		h.Lines = append(h.Lines, hunkLine{Op: op, Text: text + "\n"})
		p.i++
		if p.i < len(p.lines) && strings.HasPrefix(p.lines[p.i], `\`) {
			last := &h.Lines[len(h.Lines)-1]
			last.Text = strings.TrimSuffix(last.Text, "\n")
			if op != '+' {
				oldEOF = true
			}
			if op != '-' {
				newEOF = true
			}
			p.i++
		}
	}
	return h, nil
}

// parseHunkHeader reads "@@ -a[,b] +c[,d] @@[ section]".
func parseHunkHeader(s string) (*hunk, error) {
	rest, ok := strings.CutPrefix(s, "@@ -")
	if !ok {
		return nil, fmt.Errorf("malformed hunk header %q", clip(s, 60))
	}
	oldR, rest, ok := strings.Cut(rest, " +")
	if !ok {
		return nil, fmt.Errorf("malformed hunk header %q", clip(s, 60))
	}
	newR, section, ok := strings.Cut(rest, " @@")
	if !ok {
		return nil, fmt.Errorf("malformed hunk header %q", clip(s, 60))
	}
	h := &hunk{Section: strings.TrimPrefix(section, " ")}
	var err error
	if h.OldStart, h.OldLines, err = parseRange(oldR); err != nil {
		return nil, fmt.Errorf("malformed hunk header %q: %v", clip(s, 60), err)
	}
	if h.NewStart, h.NewLines, err = parseRange(newR); err != nil {
		return nil, fmt.Errorf("malformed hunk header %q: %v", clip(s, 60), err)
	}
	if h.OldLines == 0 && h.NewLines == 0 {
		return nil, fmt.Errorf("empty hunk %q", clip(s, 60))
	}
	if (h.OldLines > 0 && h.OldStart == 0) || (h.NewLines > 0 && h.NewStart == 0) {
		return nil, fmt.Errorf("hunk header %q has line 0 with a non-zero count", clip(s, 60))
	}
	return h, nil
}

func parseRange(s string) (start, n int, err error) {
	a, b, hasCount := strings.Cut(s, ",")
	start, err = parseLineNum(a)
	if err != nil {
		return 0, 0, err
	}
	n = 1
	if hasCount {
		if n, err = parseLineNum(b); err != nil {
			return 0, 0, err
		}
	}
	return start, n, nil
}

func parseLineNum(s string) (int, error) {
	if s == "" || len(s) > 10 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("bad line number %q", clip(s, 20))
	}
	v, err := strconv.Atoi(s)
	if err != nil || v > maxHunkStart {
		return 0, fmt.Errorf("line number %q out of range", s)
	}
	return v, nil
}

// clip shortens s for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return string(trimPartialRune([]byte(s[:n]))) + "…"
}

// applyHunks applies one file's hunks to its content. Hunks apply in order; each is looked for
// at its header's line (shifted by where the previous hunks landed) and, failing that, at the
// nearest place after the previous hunk where its old lines match exactly. Line endings adapt:
// a patch written with LF applies to a CRLF file (and the other way round), and a file whose
// last line has no newline matches a patch that forgot to say so, keeping the file's style.
func applyHunks(ctx context.Context, content string, hunks []hunk) (string, error) {
	lines := slices.Collect(strings.Lines(content))
	hunks = adaptLineEndings(content, hunks)
	noEOL := content != "" && !strings.HasSuffix(content, "\n")
	var out []string
	pos := 0   // first line of lines not yet copied
	shift := 0 // where the last hunk landed minus where its header said
	work := 0  // line comparisons so far
	lenient := false
	for hi := range hunks {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		h := &hunks[hi]
		old, new := h.sides()
		want := h.OldStart - 1 + shift
		if h.OldLines == 0 {
			want = h.OldStart + shift
		}
		at, eofFix, err := findHunk(lines, old, pos, want, &work)
		if err != nil {
			return "", fmt.Errorf("hunk %d (%s): %v", hi+1, h.header(), err)
		}
		if eofFix {
			lenient = true
		}
		out = append(out, lines[pos:at]...)
		out = append(out, new...)
		pos = at + len(old)
		base := h.OldStart - 1
		if h.OldLines == 0 {
			base = h.OldStart
		}
		shift = at - base
	}
	out = append(out, lines[pos:]...)
	result := strings.Join(out, "")
	if lenient && noEOL {
		result = strings.TrimSuffix(result, "\n")
	}
	return result, nil
}

// findHunk finds where old matches lines at or after pos, nearest to want. eofFix reports a
// match that needed the missing final newline of the file.
func findHunk(lines, old []string, pos, want int, work *int) (at int, eofFix bool, err error) {
	if len(old) == 0 {
		// Pure insertion: nothing to match, so the line number decides.
		if want < pos || want > len(lines) {
			return 0, false, fmt.Errorf("it inserts at line %d, but the file has %d lines", want, len(lines))
		}
		return want, false, nil
	}
	last := len(lines) - len(old) // last possible start
	if last < pos {
		return 0, false, fmt.Errorf("its %d old lines do not fit in the rest of the file", len(old))
	}
	want = min(max(want, pos), last)
	try := func(at int) (bool, bool, error) {
		ok, fix := matchAt(lines, old, at, work)
		if !ok && *work > maxMatchWork {
			return false, false, errors.New("too much work looking for its old lines")
		}
		return ok, fix, nil
	}
	for d := 0; want-d >= pos || want+d <= last; d++ {
		for _, at := range []int{want - d, want + d} {
			if at < pos || at > last || (d == 0 && at != want) {
				continue
			}
			ok, fix, err := try(at)
			if err != nil {
				return 0, false, err
			}
			if ok {
				return at, fix, nil
			}
			if d == 0 {
				break
			}
		}
	}
	return 0, false, mismatch(lines, old, min(max(want, pos), last))
}

// matchAt reports whether old matches lines at position at. The file's last line may lack the
// newline the patch's old line has (fix is then true).
func matchAt(lines, old []string, at int, work *int) (ok, fix bool) {
	for i, o := range old {
		*work++
		l := lines[at+i]
		if l == o {
			continue
		}
		if at+i == len(lines)-1 && i == len(old)-1 && !strings.HasSuffix(l, "\n") && o == l+"\n" {
			fix = true
			continue
		}
		return false, false
	}
	return true, fix
}

// mismatch describes why old does not match at the expected place.
func mismatch(lines, old []string, at int) error {
	for i, o := range old {
		if at+i >= len(lines) {
			break
		}
		if l := lines[at+i]; l != o {
			return fmt.Errorf("its old lines are not in the file; near line %d the file has %q where the patch expects %q",
				at+i+1, clip(strings.TrimSuffix(l, "\n"), 80), clip(strings.TrimSuffix(o, "\n"), 80))
		}
	}
	return errors.New("its old lines are not in the file")
}

// adaptLineEndings converts the hunk lines to the file's line ending when the file uses one
// style throughout and the patch uses the other one throughout.
func adaptLineEndings(content string, hunks []hunk) []hunk {
	nl := strings.Count(content, "\n")
	if nl == 0 {
		return hunks
	}
	crlf := strings.Count(content, "\r\n")
	fileCRLF, fileLF := crlf == nl, crlf == 0
	var pCRLF, pLF int
	for _, h := range hunks {
		for _, l := range h.Lines {
			switch {
			case strings.HasSuffix(l.Text, "\r\n"):
				pCRLF++
			case strings.HasSuffix(l.Text, "\n"):
				pLF++
			}
		}
	}
	var conv func(string) string
	switch {
	case fileCRLF && pCRLF == 0 && pLF > 0:
		conv = func(s string) string {
			if t, ok := strings.CutSuffix(s, "\n"); ok {
				return t + "\r\n"
			}
			return s
		}
	case fileLF && pLF == 0 && pCRLF > 0:
		conv = func(s string) string {
			if t, ok := strings.CutSuffix(s, "\r\n"); ok {
				return t + "\n"
			}
			return s
		}
	default:
		return hunks
	}
	out := make([]hunk, len(hunks))
	for i, h := range hunks {
		out[i] = h
		out[i].Lines = make([]hunkLine, len(h.Lines))
		for j, l := range h.Lines {
			out[i].Lines[j] = hunkLine{Op: l.Op, Text: conv(l.Text)}
		}
	}
	return out
}
