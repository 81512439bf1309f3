// Package jsname writes names the way a cell would write them in JavaScript, for messages that
// show a cell the expression it used or should use: whether a name is an identifier, and how a
// property of that name is accessed.
package jsname

import "strconv"

// IsIdent reports whether s is an ASCII JavaScript identifier name, which can follow a dot
// (reserved words included: they are valid property names). Non-ASCII names are not: a
// message quotes them, so confusable characters stay visible.
func IsIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
		case i > 0 && r >= '0' && r <= '9':
		default:
			return false
		}
	}
	return true
}

// Property is the access to property name as it follows an object in an expression: .name for
// an identifier of at most limit bytes, else ["name"], with a name over limit bytes cut there
// and marked with "…" (the name may come from a hostile cell or server; the message stays
// bounded).
func Property(name string, limit int) string {
	if len(name) <= limit && IsIdent(name) {
		return "." + name
	}
	if len(name) > limit {
		name = name[:limit] + "…"
	}
	return "[" + strconv.Quote(name) + "]"
}
