package config

import (
	"strconv"
	"strings"
)

// The json5 library decodes into plain Go values and forgets where each came from. To point an
// error at the offending value, a second, structural pass over the same bytes records where every
// key and value starts, keyed by its rendered path. It runs only on input json5 has accepted and
// follows json5's lexical rules (including its block-comment quirk), so it can stay small: it
// never needs to report syntax errors, only to stop quietly if it ever gets lost.

// span locates one value in the source; offsets are in bytes.
type span struct {
	key   int // start of the key, or -1 for the top level and array elements
	value int // first byte of the value
	end   int // just past the value, or -1 if the scan got lost inside it
}

// dupKey is a key that appears twice in one object: json5 keeps the last one silently, which is
// exactly the kind of surprise (a second, forgotten timeoutMs) a strict config must not allow.
type dupKey struct {
	p     path
	at    int // the repeated key
	first int // the earlier one
}

type index struct {
	spans map[string]span
	dups  []dupKey
}

// maxIndexDepth bounds the indexer's recursion. Deeper values are skipped without being
// indexed: they are far outside the schema, whose errors point at an outer value anyway.
const maxIndexDepth = 256

func buildIndex(data []byte) *index {
	ix := &indexer{data: data, idx: &index{spans: make(map[string]span)}}
	ix.value(nil, -1, 0)
	return ix.idx
}

// lookup returns the span of p, or of its nearest indexed ancestor.
func (x *index) lookup(p path) (span, bool) {
	for {
		if s, ok := x.spans[p.String()]; ok {
			return s, true
		}
		if len(p) == 0 {
			return span{}, false
		}
		p = p[:len(p)-1]
	}
}

type indexer struct {
	data []byte
	pos  int
	idx  *index
}

func (ix *indexer) peek() (byte, bool) {
	if ix.pos >= len(ix.data) {
		return 0, false
	}
	return ix.data[ix.pos], true
}

// skip moves past whitespace and comments. It reports false on an unterminated block comment.
func (ix *indexer) skip() bool {
	var ok bool
	ix.pos, ok = skipSpace(ix.data, ix.pos)
	return ok
}

// skipSpace returns the offset of the first byte at or after pos that is neither whitespace nor
// inside a comment, and false if a block comment is unterminated.
func skipSpace(data []byte, pos int) (int, bool) {
	for pos < len(data) {
		switch c := data[pos]; {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f':
			pos++
		case c == '/' && pos+1 < len(data) && data[pos+1] == '/':
			// json5 ends a line comment at '\n' or at a lone '\r'.
			n := strings.IndexAny(string(data[pos+2:]), "\r\n")
			if n < 0 {
				return len(data), true
			}
			pos += 2 + n
		case c == '/' && pos+1 < len(data) && data[pos+1] == '*':
			// json5's block comment ends at the first '/' after the first '*' that follows "/*".
			star := strings.IndexByte(string(data[pos+2:]), '*')
			if star < 0 {
				return len(data), false
			}
			after := pos + 2 + star + 1
			slash := strings.IndexByte(string(data[after:]), '/')
			if slash < 0 {
				return len(data), false
			}
			pos = after + slash + 1
		default:
			return pos, true
		}
	}
	return pos, true
}

func (ix *indexer) value(p path, keyAt, depth int) bool {
	if !ix.skip() {
		return false
	}
	if depth > maxIndexDepth {
		return ix.skipValue()
	}
	c, ok := ix.peek()
	if !ok {
		return false
	}
	start := ix.pos
	// Record the start before descending so that, should the scan ever get lost inside, the
	// enclosing values still have positions to fall back to.
	key := p.String()
	ix.idx.spans[key] = span{key: keyAt, value: start, end: -1}
	switch {
	case c == '{':
		ok = ix.object(p, depth)
	case c == '[':
		ok = ix.array(p, depth)
	case c == '"' || c == '\'':
		ok = ix.str()
	default:
		for ix.pos < len(ix.data) && isLiteralByte(ix.data[ix.pos]) {
			ix.pos++
		}
		ok = ix.pos > start
	}
	if !ok {
		return false
	}
	ix.idx.spans[key] = span{key: keyAt, value: start, end: ix.pos}
	return true
}

func (ix *indexer) object(p path, depth int) bool {
	ix.pos++ // '{'
	seen := make(map[string]int)
	for {
		if !ix.skip() {
			return false
		}
		c, ok := ix.peek()
		if !ok {
			return false
		}
		if c == '}' {
			ix.pos++
			return true
		}
		keyAt := ix.pos
		var key string
		switch {
		case c == '"' || c == '\'':
			if !ix.str() {
				return false
			}
			v, err := unmarshal(ix.data[keyAt:ix.pos])
			if key, ok = v.(string); err != nil || !ok {
				return false
			}
		case isKeyByte(c):
			for ix.pos < len(ix.data) && isKeyByte(ix.data[ix.pos]) {
				ix.pos++
			}
			key = string(ix.data[keyAt:ix.pos])
		default:
			return false
		}
		if !ix.skip() {
			return false
		}
		if c, ok := ix.peek(); !ok || c != ':' {
			return false
		}
		ix.pos++
		child := p.key(key)
		if first, dup := seen[key]; dup {
			ix.idx.dups = append(ix.idx.dups, dupKey{p: child, at: keyAt, first: first})
		}
		seen[key] = keyAt
		if !ix.value(child, keyAt, depth+1) || !ix.skip() {
			return false
		}
		c, ok = ix.peek()
		switch {
		case ok && c == ',':
			ix.pos++
		case ok && c == '}':
			ix.pos++
			return true
		default:
			return false
		}
	}
}

func (ix *indexer) array(p path, depth int) bool {
	ix.pos++ // '['
	for i := 0; ; i++ {
		if !ix.skip() {
			return false
		}
		c, ok := ix.peek()
		if !ok {
			return false
		}
		if c == ']' {
			ix.pos++
			return true
		}
		if !ix.value(p.index(i), -1, depth+1) || !ix.skip() {
			return false
		}
		c, ok = ix.peek()
		switch {
		case ok && c == ',':
			ix.pos++
		case ok && c == ']':
			ix.pos++
			return true
		default:
			return false
		}
	}
}

// skipValue moves past one value without recursion or recording anything.
func (ix *indexer) skipValue() bool {
	nesting := 0
	for {
		if !ix.skip() {
			return false
		}
		c, ok := ix.peek()
		switch {
		case !ok:
			return false
		case c == '{' || c == '[':
			nesting++
			ix.pos++
		case c == '}' || c == ']':
			nesting--
			ix.pos++
		case c == '"' || c == '\'':
			if !ix.str() {
				return false
			}
		case isLiteralByte(c):
			for ix.pos < len(ix.data) && isLiteralByte(ix.data[ix.pos]) {
				ix.pos++
			}
		default: // ':' and ',' inside the skipped value
			if nesting == 0 {
				return false
			}
			ix.pos++
		}
		if nesting <= 0 {
			return nesting == 0
		}
	}
}

// str moves past a quoted string starting at pos.
func (ix *indexer) str() bool {
	q := ix.data[ix.pos]
	for ix.pos++; ix.pos < len(ix.data); ix.pos++ {
		switch ix.data[ix.pos] {
		case '\\':
			ix.pos++
		case q:
			ix.pos++
			return true
		}
	}
	return false
}

// isLiteralByte covers every byte of the literals json5 accepts: numbers (decimal, hex,
// exponents, signs), true, false, null, Infinity and NaN.
func isLiteralByte(c byte) bool {
	return isKeyByte(c) || c == '.' || c == '+' || c == '-'
}

// isKeyByte matches json5's unquoted keys.
func isKeyByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '$'
}

// path is a setting's location as rendered segments: plain keys, quoted keys (`["a b"]`) and
// array indices (`[3]`). Rendering makes it unambiguous, so its String form keys the index.
type path []string

func (p path) key(k string) path { return p.with(renderKey(k)) }

func (p path) index(i int) path { return p.with("[" + strconv.Itoa(i) + "]") }

func (p path) with(seg string) path {
	q := make(path, len(p)+1)
	copy(q, p)
	q[len(p)] = seg
	return q
}

func (p path) String() string {
	var b strings.Builder
	for i, seg := range p {
		if i > 0 && !strings.HasPrefix(seg, "[") {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	return b.String()
}

// renderKey keeps ordinary keys (including server names like "chrome-devtools") readable and
// quotes the rest, so that no key can be confused with a path separator.
func renderKey(k string) string {
	if k == "" {
		return `[""]`
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; !isKeyByte(c) && c != '-' {
			return "[" + strconv.Quote(k) + "]"
		}
	}
	return k
}
