package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/codemode-go/codemode/internal/jsname"
)

// A value too large to show is described instead: its size, its top-level count, the paths
// observed in it with their types and counts (`$[*].tags[*]: string ×31000`), and the start of
// its JSON. The description is what the model sees in place of the value, so it says what it is
// — observed data, sampled and bounded — and never poses as a schema.

// Bounds of a shape: paths recorded, depth below the root, keys recorded per object path,
// length of a key in a path.
const (
	maxPaths     = 48
	maxPathDepth = 5
	maxKeys      = 16
	maxKeyBytes  = 64
)

// ShapeNote says what a shape is, in every description that has one.
const ShapeNote = "observed in this value (paths, types and counts; bounded): not a schema"

type pathStat struct {
	path      string
	depth     int
	count     int
	types     uint8
	minLen    int
	maxLen    int
	keys      int // distinct keys recorded under this object path
	extraKeys bool
	deeper    bool
}

const (
	tObject = 1 << iota
	tArray
	tString
	tNumber
	tBool
	tNull
)

var typeNames = []string{"object", "array", "string", "number", "boolean", "null"}

// Shape is what a scan of a JSON value observed.
type Shape struct {
	paths []*pathStat
	index map[string]int
	// Count is the top-level array length, object key count, or 1 for a scalar.
	Count     int
	truncated bool
}

type frame struct {
	array bool
	path  int // index into paths, -1 when not recorded
	n     int
}

// Scan walks a JSON value (valid JSON, as encode and JSON.stringify write it) once, without
// decoding it into Go values and without recursion: memory is bounded by its nesting.
func Scan(b []byte) *Shape {
	s := &Shape{index: map[string]int{}}
	var stack []frame
	pos := 0
	root := s.record(-1, "$", 0)
	skipWS := func() {
		for pos < len(b) && (b[pos] == ' ' || b[pos] == '\n' || b[pos] == '\r' || b[pos] == '\t') {
			pos++
		}
	}
	// value reads one value at pos for path p.
	value := func(p int) bool {
		skipWS()
		if pos >= len(b) {
			return false
		}
		switch c := b[pos]; {
		case c == '{':
			s.observe(p, tObject, 0)
			stack = append(stack, frame{path: p})
			pos++
		case c == '[':
			s.observe(p, tArray, 0)
			stack = append(stack, frame{array: true, path: p})
			pos++
		case c == '"':
			s.observe(p, tString, 0)
			pos = stringEnd(b, pos+1) + 1
		case c == 't':
			s.observe(p, tBool, 0)
			pos += 4
		case c == 'f':
			s.observe(p, tBool, 0)
			pos += 5
		case c == 'n':
			s.observe(p, tNull, 0)
			pos += 4
		default:
			s.observe(p, tNumber, 0)
			for pos < len(b) && strings.IndexByte("+-.0123456789eE", b[pos]) >= 0 {
				pos++
			}
		}
		return true
	}
	if !value(root) {
		return s
	}
	for len(stack) > 0 && pos < len(b) {
		top := &stack[len(stack)-1]
		skipWS()
		if pos >= len(b) {
			break
		}
		if c := b[pos]; c == '}' || c == ']' {
			pos++
			if top.array && top.path >= 0 {
				s.arrayLength(top.path, top.n)
			}
			if len(stack) == 1 {
				s.Count = top.n
			}
			stack = stack[:len(stack)-1]
			continue
		}
		if b[pos] == ',' {
			pos++
			skipWS()
		}
		top.n++
		if top.array {
			if !value(s.child(top.path, "[*]")) {
				break
			}
		} else {
			if pos >= len(b) || b[pos] != '"' {
				break
			}
			end := stringEnd(b, pos+1)
			key := jsonKey(b[pos+1 : end])
			pos = end + 1
			skipWS()
			if pos < len(b) && b[pos] == ':' {
				pos++
			}
			if !value(s.child(top.path, keySegment(key))) {
				break
			}
		}
	}
	if len(s.paths) > 0 && s.paths[0].types&(tObject|tArray) == 0 {
		s.Count = 1
	}
	return s
}

// stringEnd is the index of the quote closing the JSON string whose body starts at i.
func stringEnd(b []byte, i int) int {
	for {
		j := bytes.IndexAny(b[i:], `"\`)
		if j < 0 {
			return len(b) - 1
		}
		if b[i+j] == '"' {
			return i + j
		}
		i += j + 2
	}
}

func jsonKey(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw)
	}
	var s string
	if json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &s) != nil {
		return string(raw)
	}
	return s
}

// keySegment renders a key as a path step: .name for identifiers, ["…"] otherwise.
func keySegment(k string) string {
	if len(k) > maxKeyBytes {
		k = k[:cutRunes(k, maxKeyBytes)] + "…"
	}
	if jsname.IsIdent(k) {
		return "." + k
	}
	q, _ := json.Marshal(k)
	return "[" + string(q) + "]"
}

func (s *Shape) record(parent int, path string, depth int) int {
	if i, ok := s.index[path]; ok {
		return i
	}
	if len(s.paths) >= maxPaths {
		s.truncated = true
		return -1
	}
	s.paths = append(s.paths, &pathStat{path: path, depth: depth, minLen: -1})
	s.index[path] = len(s.paths) - 1
	if parent >= 0 && !strings.HasSuffix(path, "[*]") {
		s.paths[parent].keys++
	}
	return len(s.paths) - 1
}

// child is the path index of a step below p, or -1 when that is past the bounds.
func (s *Shape) child(p int, seg string) int {
	if p < 0 {
		return -1
	}
	ps := s.paths[p]
	if ps.depth >= maxPathDepth {
		ps.deeper = true
		return -1
	}
	path := ps.path + seg
	if i, ok := s.index[path]; ok {
		return i
	}
	if seg != "[*]" && ps.keys >= maxKeys {
		ps.extraKeys = true
		return -1
	}
	return s.record(p, path, ps.depth+1)
}

func (s *Shape) observe(p int, t uint8, _ int) {
	if p < 0 {
		return
	}
	ps := s.paths[p]
	ps.count++
	ps.types |= t
}

func (s *Shape) arrayLength(p, n int) {
	ps := s.paths[p]
	if ps.minLen < 0 || n < ps.minLen {
		ps.minLen = n
	}
	if n > ps.maxLen {
		ps.maxLen = n
	}
}

// Describe renders the shape: path → "types ×count (length a–b) …", in the order paths were
// first seen, at most n paths.
func (s *Shape) describe(n int) ([]string, []string) {
	var keys, vals []string
	for i, p := range s.paths {
		if i >= n {
			break
		}
		var t []string
		for j, name := range typeNames {
			if p.types&(1<<j) != 0 {
				t = append(t, name)
			}
		}
		d := strings.Join(t, "|") + " ×" + strconv.Itoa(p.count)
		if p.types&tArray != 0 && p.minLen >= 0 {
			if p.minLen == p.maxLen {
				d += fmt.Sprintf(" (length %d)", p.maxLen)
			} else {
				d += fmt.Sprintf(" (length %d–%d)", p.minLen, p.maxLen)
			}
		}
		if p.extraKeys {
			d += " (more keys not listed)"
		}
		if p.deeper {
			d += " (deeper levels not listed)"
		}
		keys, vals = append(keys, p.path), append(vals, d)
	}
	return keys, vals
}

// Descriptor is what results.save returns and what a reference holds: the saved value's
// identity and a bounded view of it.
type Descriptor struct {
	ID    string
	Bytes int
	Count int
	Shape *Shape
	// JSON is (the start of) the value, for the preview.
	JSON []byte
}

// Render writes the descriptor as JSON in at most budget bytes (as json.Marshal writes it):
// the identity always, then as many shape paths and as much preview as fit.
func (d Descriptor) Render(budget int) []byte {
	n := 0
	if d.Shape != nil {
		n = len(d.Shape.paths)
	}
	for {
		b := d.render(n, -1)
		if len(b) <= budget || n == 0 {
			if len(b) > budget {
				b = d.identity()
			}
			// Fill what is left with the preview.
			room := budget - len(b) - len(`,"preview":"","previewTruncated":true`)
			if room > 0 && len(d.JSON) > 0 {
				if full := d.render(n, len(d.JSON)); len(full) <= budget {
					return full
				}
				if p := d.render(n, fitJSONString(d.JSON, room)); len(p) <= budget {
					return p
				}
			}
			return b
		}
		n = min(n-1, n/2+1)
		if n < 0 {
			n = 0
		}
	}
}

func (d Descriptor) identity() []byte {
	b, _ := json.Marshal(struct {
		ID    string `json:"id"`
		Bytes int    `json:"bytes"`
		Count int    `json:"count"`
	}{d.ID, d.Bytes, d.Count})
	return b
}

// render writes the descriptor with n shape paths and preview bytes of JSON (-1: none).
func (d Descriptor) render(n, preview int) []byte {
	var b bytes.Buffer
	id := d.identity()
	b.Write(id[:len(id)-1])
	if d.Shape != nil && n > 0 {
		keys, vals := d.Shape.describe(n)
		b.WriteString(`,"shape":{`)
		for i := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(keys[i])
			v, _ := json.Marshal(vals[i])
			b.Write(k)
			b.WriteByte(':')
			b.Write(v)
		}
		b.WriteString(`},"shapeNote":`)
		note, _ := json.Marshal(ShapeNote)
		b.Write(note)
		if n < len(d.Shape.paths) || d.Shape.truncated {
			b.WriteString(`,"shapeTruncated":true`)
		}
	}
	if preview >= 0 {
		p, _ := json.Marshal(string(d.JSON[:preview]))
		b.WriteString(`,"preview":`)
		b.Write(p)
		if preview < len(d.JSON) || d.Bytes > len(d.JSON) {
			b.WriteString(`,"previewTruncated":true`)
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// fitJSONString is the longest rune-aligned prefix of s whose JSON string encoding (quotes
// excluded, as json.Marshal escapes) takes at most room bytes.
func fitJSONString(s []byte, room int) int {
	cost := 0
	for i := 0; i < len(s); {
		c := s[i]
		n, size := 1, 1
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
				n = 2
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n = 6
			}
		} else {
			r, sz := utf8.DecodeRune(s[i:])
			size, n = sz, sz
			if r == utf8.RuneError && sz == 1 {
				n = 6 // json.Marshal writes \ufffd
			} else if r == '\u2028' || r == '\u2029' {
				n = 6
			}
		}
		if cost+n > room {
			return i
		}
		cost += n
		i += size
	}
	return len(s)
}

func cutRunes(s string, n int) int {
	if n >= len(s) {
		return len(s)
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

// Reference is the final value of a cell whose value was saved instead of shown: the
// descriptor of the saved value and what to do with it, in at most budget bytes.
func Reference(d Descriptor, maxOutputBytes, budget int) []byte {
	guidance := fmt.Sprintf("Too large to show (maxOutputBytes %d), so saved whole: in a later exec, await results.load(%q) and return only what you need.", maxOutputBytes, d.ID)
	b := wrap(budget, func(inner int) []byte {
		return marshalOrdered([]kv{{"truncated", true}, {"reference", json.RawMessage(d.Render(inner))}, {"guidance", guidance}})
	})
	if len(b) > budget { // a budget this small keeps the identity only
		b = marshalOrdered([]kv{{"truncated", true}, {"reference", json.RawMessage(d.identity())}})
	}
	return b
}

// Truncated is the final value of a cell whose oversized value could not be saved: its size,
// the start of its JSON and why, in at most budget bytes.
func Truncated(prefix []byte, total, maxOutputBytes, budget int, why string) []byte {
	guidance := fmt.Sprintf("Too large to show (maxOutputBytes %d) and not saved (%s): return a smaller projection (filter, slice, paginate).", maxOutputBytes, why)
	base := marshalOrdered([]kv{{"truncated", true}, {"bytes", total}, {"omittedBytes", total}, {"prefix", ""}, {"guidance", guidance}})
	if len(base) > budget {
		return marshalOrdered([]kv{{"truncated", true}, {"bytes", total}})
	}
	n := fitJSONString(prefix, budget-len(base))
	return marshalOrdered([]kv{{"truncated", true}, {"bytes", total}, {"omittedBytes", total - n}, {"prefix", string(prefix[:n])}, {"guidance", guidance}})
}

// wrap finds the largest inner budget for which build fits in budget.
func wrap(budget int, build func(inner int) []byte) []byte {
	inner := budget
	for range 8 {
		b := build(inner)
		if len(b) <= budget {
			return b
		}
		inner -= len(b) - budget
		if inner <= 0 {
			break
		}
	}
	return build(0)
}

type kv struct {
	k string
	v any
}

// marshalOrdered writes an object with its keys in the given order.
func marshalOrdered(fields []kv) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.k)
		v, _ := json.Marshal(f.v)
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes()
}
