package trajectory

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/tdewolff/parse/v2"
	"github.com/tdewolff/parse/v2/js"
)

// A cell's source is stored as the model wrote it, and models write credentials into code:
// `const API_TOKEN = "plainvalue12345"`, `{password: "hunter2hunter2"}` (issue 22 item 7). The
// trajectory masks the literal value of every assignment, initialiser, default and object
// property whose name looks like a credential (the same names secretKey redacts in JSON), on
// top of the shapes secretValue knows and the secrets registered with the writer. The cell still
// runs with the real text: only the record is masked.

// MaskSource returns code with the string literals assigned to (or compared with)
// credential-looking names replaced by "[redacted]" (quotes kept, so the record still reads as
// code). Code the lexer cannot follow is masked as far as it got.
func MaskSource(code string) (masked string) {
	if !hasAny(code, keyWords) {
		return code // no credential-looking name at all
	}
	defer func() {
		// The lexer is someone else's code fed hostile input: if it fails, record nothing of the
		// source rather than something unmasked.
		if recover() != nil {
			masked = "[source not recorded: it could not be masked]"
		}
	}()
	type span struct{ from, to int }
	var spans []span
	l := js.NewLexer(parse.NewInputString(code))
	in := 0 // byte offset of the next token
	prev := js.ErrorToken
	// A credential-looking name, then `=`, `:`, `+=`, `??=` or `||=`, then a string literal.
	nameOK, sep := false, false
	for {
		tt, text := l.Next()
		if tt == js.ErrorToken && len(text) == 0 {
			break
		}
		start := in
		if (tt == js.DivToken || tt == js.DivEqToken) && regexpMayFollow(prev) {
			if tt, text = l.RegExp(); tt == js.ErrorToken {
				break
			}
		}
		in = start + len(text)
		if tt == js.ErrorToken && in >= len(code) {
			break // the lexer must not be asked past the end
		}
		switch tt {
		case js.WhitespaceToken, js.LineTerminatorToken, js.CommentToken, js.CommentLineTerminatorToken:
			continue
		}
		prev = tt
		if nameOK && sep && (tt == js.StringToken || tt == js.TemplateToken) && len(text) > 2 {
			spans = append(spans, span{start + 1, start + len(text) - 1})
		}
		if nameOK && !sep && (tt == js.EqToken || tt == js.ColonToken || tt == js.AddEqToken || tt == js.NullishEqToken || tt == js.OrEqToken ||
			tt == js.EqEqToken || tt == js.EqEqEqToken || tt == js.NotEqToken || tt == js.NotEqEqToken) {
			sep = true
			continue
		}
		nameOK, sep = false, false
		var name []byte
		switch {
		case tt == js.IdentifierToken || tt == js.PrivateIdentifierToken || js.IsIdentifierName(tt):
			name = bytes.TrimPrefix(text, []byte("#"))
		case tt == js.StringToken:
			name = unquote(text)
		default:
			continue
		}
		nameOK = hasAny(name, keyWords) && secretKey.Match(name)
	}
	if len(spans) == 0 {
		return code
	}
	var b strings.Builder
	last := 0
	for _, s := range spans {
		b.WriteString(code[last:s.from])
		b.WriteString(redacted)
		last = s.to
	}
	b.WriteString(code[last:])
	return b.String()
}

// regexpMayFollow reports whether a '/' after prev starts a regular expression (rather than a
// division): at the start, after punctuators, operators and the keywords that take an operand.
func regexpMayFollow(prev js.TokenType) bool {
	switch {
	case prev == js.ErrorToken:
		return true
	case prev == js.CloseParenToken, prev == js.CloseBracketToken, prev == js.CloseBraceToken, prev == js.IncrToken, prev == js.DecrToken:
		return false
	case js.IsPunctuator(prev), js.IsOperator(prev):
		return true
	}
	switch prev {
	case js.ReturnToken, js.TypeofToken, js.InstanceofToken, js.InToken, js.OfToken, js.NewToken, js.DeleteToken,
		js.VoidToken, js.ThrowToken, js.CaseToken, js.DoToken, js.ElseToken, js.AwaitToken, js.YieldToken:
		return true
	}
	return false
}

// unquote is a JavaScript string literal's content, as far as JSON can read it (else as it is).
func unquote(lit []byte) []byte {
	if len(lit) < 2 {
		return lit
	}
	body := lit[1 : len(lit)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		return body
	}
	var s string
	if json.Unmarshal(append(append([]byte{'"'}, body...), '"'), &s) == nil {
		return []byte(s)
	}
	return body
}

// maskCellInput masks the source of an exec's input (its code and command fields).
func maskCellInput(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || !hasAny(raw, keyWords) {
		return raw
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	changed := false
	for _, k := range []string{"code", "command"} {
		var src string
		if v, ok := m[k]; ok && json.Unmarshal(v, &src) == nil {
			if masked := MaskSource(src); masked != src {
				m[k], _ = marshal(masked)
				changed = true
			}
		}
	}
	if !changed {
		return raw
	}
	// Keep the model's key order: rewrite the object in the order the keys came.
	dec := json.NewDecoder(bytes.NewReader(raw))
	var out bytes.Buffer
	out.WriteByte('{')
	if _, err := dec.Token(); err != nil {
		return raw
	}
	for first := true; dec.More(); first = false {
		t, err := dec.Token()
		if err != nil {
			return raw
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return raw
		}
		if !first {
			out.WriteByte(',')
		}
		kb, _ := marshal(k)
		out.Write(kb)
		out.WriteByte(':')
		if mv, ok := m[k]; ok && (k == "code" || k == "command") {
			v = mv
		}
		out.Write(v)
	}
	out.WriteByte('}')
	return out.Bytes()
}
