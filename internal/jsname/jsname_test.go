package jsname

import (
	"strings"
	"testing"
)

func TestIsIdent(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"getSum", true},
		{"_private", true},
		{"$ref", true},
		{"a1", true},
		{"class", true}, // reserved words are valid property names
		{"", false},
		{"1a", false},
		{"get-sum", false},
		{"a b", false},
		{"café", false}, // non-ASCII is quoted on purpose
		{"a\x00", false},
	}
	for _, tc := range tests {
		if got := IsIdent(tc.s); got != tc.want {
			t.Errorf("IsIdent(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}

func TestProperty(t *testing.T) {
	tests := []struct {
		name  string
		limit int
		want  string
	}{
		{"getSum", 80, ".getSum"},
		{"get-sum", 80, `["get-sum"]`},
		{"", 80, `[""]`},
		{"0", 80, `["0"]`},
		{`a"b`, 80, `["a\"b"]`},
		{"abcdef", 6, ".abcdef"},
		{"abcdefg", 6, `["abcdef…"]`}, // an identifier over the limit is cut and quoted
		{"a b c d", 3, `["a b…"]`},
	}
	for _, tc := range tests {
		if got := Property(tc.name, tc.limit); got != tc.want {
			t.Errorf("Property(%q, %d) = %s, want %s", tc.name, tc.limit, got, tc.want)
		}
	}
}

// FuzzProperty: whatever the name, the access is well formed and bounded.
func FuzzProperty(f *testing.F) {
	for _, s := range []string{"a", "a b", "\xff", strings.Repeat("x", 100), "\"", "\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got := Property(name, 20)
		switch {
		case strings.HasPrefix(got, "."):
			if !IsIdent(got[1:]) || got[1:] != name {
				t.Fatalf("Property(%q) = %s", name, got)
			}
		case strings.HasPrefix(got, `["`) && strings.HasSuffix(got, `"]`):
		default:
			t.Fatalf("Property(%q) = %s", name, got)
		}
		// Each byte of the cut name quotes to at most 4 bytes (\xff), plus the brackets and "…".
		if len(got) > 4*20+10 {
			t.Fatalf("Property(%q) is %d bytes", name, len(got))
		}
	})
}
