package source

import (
	"encoding/json"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/evanw/esbuild/pkg/api"
)

// tsUsed records whether this process ever transpiled TypeScript. esbuild is linked into the
// binary, but its transform machinery (parser, printer, worker goroutines) starts on first use
// only: JavaScript-only and disabled paths never reach api.Transform (T2).
var tsUsed atomic.Bool

// TypeScriptUsed reports whether the TypeScript transform has run in this process.
func TypeScriptUsed() bool { return tsUsed.Load() }

// prepareTypeScript strips types with esbuild (T1: a source transform — no type checking, no
// module resolution) and maps positions back through esbuild's source map.
// depth is the cell's measured nesting (checked by Prepare).
func prepareTypeScript(code string, depth int) (*Program, error) {
	tsUsed.Store(true)
	body, lifted, imports := liftImports(code)
	wrapped := lifted + wrapperHead + body + wrapperTail
	res := api.Transform(wrapped, api.TransformOptions{
		Loader:     api.LoaderTS,
		Target:     api.ESNext,
		Sourcemap:  api.SourceMapExternal,
		Sourcefile: "cell.ts",
		LogLevel:   api.LogLevelSilent,
		// Keep the program a single expression statement whose value is the cell function.
		TreeShaking: api.TreeShakingFalse,
		// Pretty-printed output indents by depth: 1,365 nested braceless `if`s or multi-line
		// arrays print O(depth²) spaces, hundreds of MB from a 128 KiB cell. A deep cell is
		// printed without whitespace (linear); others keep the readable form, whose spacing
		// matches the model's, so positions between source-map segments stay exact.
		MinifyWhitespace: depth > prettyMaxDepth,
	})
	lines := strings.Count(code, "\n") + 1
	// toCode maps a 1-based line:column in the wrapped source to the model's code; the wrapper's
	// closing line maps to the end of the code, as for JavaScript.
	toCode := func(l, c int) (int, int, bool) {
		switch {
		case l == 1:
			// A declaration lifted onto the wrapper's first line: its original place.
			for _, im := range imports {
				if c >= im.from && c < im.to {
					return im.line, im.col, true
				}
			}
			return 0, 0, false
		case l < 2:
			return 0, 0, false
		case l > lines+1:
			return lines, lineLen(code) + 1, true
		}
		return l - 1, c, true
	}
	if len(res.Errors) > 0 {
		return nil, tsError(res.Errors[0], toCode, code)
	}
	js := strings.TrimRight(string(res.Code), "\n")
	js = strings.TrimSuffix(js, ";")
	sm := decodeSourceMap(res.Map)
	mapper := func(line, col int) (int, int, bool) {
		l, c, ok := sm.lookup(line, col)
		if !ok {
			return 0, 0, false
		}
		return toCode(l, c)
	}
	if err := checkModuleAccess(js, 0); err != nil {
		if e, ok := err.(*Error); ok && e.Line > 0 {
			if l, c, ok := mapper(e.Line, e.Column); ok {
				e.Line, e.Column = l, c
			} else {
				e.Line, e.Column = 0, 0
			}
		}
		return nil, err
	}
	return &Program{Language: TypeScript, JS: js, Source: code, pos: mapper}, nil
}

// tsError turns an esbuild diagnostic into an Error positioned in the model's code. esbuild
// reports 0-based byte columns; positions here count UTF-16 units, as the engine's do. A
// diagnostic at an import/export keyword (a declaration is never valid in a function body) gets
// the same message as in JavaScript (X4).
func tsError(m api.Message, toCode func(l, c int) (int, int, bool), code string) error {
	e := &Error{Msg: "SyntaxError: " + m.Text}
	loc := m.Location
	if loc == nil {
		return e
	}
	if loc.Line > strings.Count(code, "\n")+2 {
		// On the wrapper's closing line: the diagnostic is about our `})`, not the model's code.
		u := unfinished(code)
		u.Msg = "SyntaxError: " + u.Msg
		return u
	}
	byteCol := min(max(loc.Column, 0), len(loc.LineText))
	before := loc.LineText[:byteCol]
	if word, at, ok := moduleKeyword(before, loc.LineText[byteCol:]); ok {
		e.Msg, byteCol = moduleMsg(word), at
	}
	_, col := lineCol(loc.LineText, byteCol)
	if l, c, ok := toCode(loc.Line, col); ok {
		e.Line, e.Column = l, c
	}
	return e
}

// moduleKeyword reports whether a diagnostic between before and after sits on an import/export
// keyword or on the token right after one, and the keyword's byte column.
func moduleKeyword(before, after string) (string, int, bool) {
	for _, w := range []string{"import", "export"} {
		if strings.HasPrefix(after, w) && !identPart(after[len(w):]) && !identEnd(before) {
			return w, len(before), true
		}
		t := strings.TrimRight(before, " \t")
		if strings.HasSuffix(t, w) && !identEnd(t[:len(t)-len(w)]) && (len(t) < len(before) || !identPart(after)) {
			return w, len(t) - len(w), true
		}
	}
	return "", 0, false
}

func identEnd(s string) bool { return s != "" && isIdentByte(s[len(s)-1]) || strings.HasSuffix(s, ".") }

func identPart(s string) bool { return s != "" && isIdentByte(s[0]) }

func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// sourceMap is the part of a v3 source map we need: for each generated line, segments sorted by
// generated column, mapping to an original (0-based) line and column.
type sourceMap [][]segment

type segment struct{ genCol, srcLine, srcCol int }

func decodeSourceMap(raw []byte) sourceMap {
	var m struct {
		Mappings string `json:"mappings"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	var out sourceMap
	srcLine, srcCol, srcIdx := 0, 0, 0
	for _, line := range strings.Split(m.Mappings, ";") {
		var segs []segment
		genCol := 0
		for _, seg := range strings.Split(line, ",") {
			if seg == "" {
				continue
			}
			vals, ok := decodeVLQ(seg)
			if !ok || len(vals) == 0 {
				continue
			}
			genCol += vals[0]
			if len(vals) >= 4 {
				srcIdx += vals[1]
				srcLine += vals[2]
				srcCol += vals[3]
				segs = append(segs, segment{genCol, srcLine, srcCol})
			}
		}
		sort.SliceStable(segs, func(i, j int) bool { return segs[i].genCol < segs[j].genCol })
		out = append(out, segs)
	}
	_ = srcIdx
	return out
}

// lookup maps a 1-based generated line:column to a 1-based original line:column.
func (sm sourceMap) lookup(line, col int) (int, int, bool) {
	if line < 1 || line > len(sm) {
		return 0, 0, false
	}
	segs := sm[line-1]
	i := sort.Search(len(segs), func(i int) bool { return segs[i].genCol > col-1 }) - 1
	if i < 0 {
		if len(segs) == 0 {
			return 0, 0, false
		}
		i = 0
	}
	// Extrapolate within a segment; a column before the line's first segment maps to that
	// segment's start (never to a column < 1).
	return segs[i].srcLine + 1, segs[i].srcCol + 1 + max(col-1-segs[i].genCol, 0), true
}

const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

func decodeVLQ(s string) ([]int, bool) {
	var out []int
	val, shift := 0, 0
	for i := 0; i < len(s); i++ {
		d := strings.IndexByte(b64, s[i])
		if d < 0 {
			return nil, false
		}
		val += (d & 31) << shift
		if d&32 != 0 {
			shift += 5
			if shift > 30 {
				return nil, false
			}
			continue
		}
		if val&1 != 0 {
			out = append(out, -(val >> 1))
		} else {
			out = append(out, val>>1)
		}
		val, shift = 0, 0
	}
	return out, shift == 0
}
