package textcut

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPrefix(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "abc"},
		{"abc", 0, ""},
		{"aé", 2, "a"},              // é is 2 bytes: cutting at 2 would split it
		{"aé", 3, "aé"},             // fits exactly
		{"a€b", 3, "a"},             // € is 3 bytes
		{"a€b", 4, "a€"},            // cut after it
		{"😀x", 3, ""},               // a 4-byte rune at the start: nothing fits
		{"ab\x80\x80\x80c", 4, "a"}, // stray continuation bytes belong to the rune before them
		{"\xffabc", 2, "\xffa"},     // an invalid start byte counts as a rune start
	}
	for _, tc := range tests {
		if got := Prefix(tc.s, tc.n); got != tc.want {
			t.Errorf("Prefix(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
		if got := string(Prefix([]byte(tc.s), tc.n)); got != tc.want {
			t.Errorf("Prefix([]byte(%q), %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

// FuzzPrefix: the cut is a prefix within the bound, and valid UTF-8 stays valid.
func FuzzPrefix(f *testing.F) {
	f.Add("héllo wörld", 4)
	f.Add("\x80\x80", 1)
	f.Add("😀😀", 5)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 0 {
			n = -n
		}
		if n < 0 {
			return
		}
		got := Prefix(s, n)
		if len(got) > n || !strings.HasPrefix(s, got) {
			t.Fatalf("Prefix(%q, %d) = %q", s, n, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Prefix(%q, %d) = %q splits a rune", s, n, got)
		}
		if utf8.ValidString(s) && len(s) > n && n-len(got) >= utf8.UTFMax {
			t.Fatalf("Prefix(%q, %d) = %q cut more than one rune", s, n, got)
		}
	})
}

// Line is what a terminal, a progress line and an audit record get from hostile text: nothing
// that moves the cursor or reorders what a person reads, one line, bounded.
func TestLine(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"plain", 10, "plain"},
		{"two\nlines\tand  spaces ", 40, "two lines and spaces"},
		{"\x1b[2Jclear", 40, "[2Jclear"},         // the escape byte goes, the rest is inert text
		{"evil\u202etxt.exe", 40, "eviltxt.exe"}, // a bidi override
		{"zero\u200bwidth", 40, "zerowidth"},     // a format character
		{"bad\xffbyte", 40, "badbyte"},           // invalid UTF-8
		{"abcdef", 3, "abc…"},                    // cut, and the cut marked
		{"aé€", 4, "aé…"},                        // never inside a rune
		{"  \n\t ", 10, ""},
	}
	for _, tc := range tests {
		if got := Line(tc.s, tc.n); got != tc.want {
			t.Errorf("Line(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
	if got := Ellipsis("a\nb", 10); got != "a\nb" {
		t.Errorf("Ellipsis changes what fits: %q", got)
	}
	if got := Ellipsis("a€b", 2); got != "a…" {
		t.Errorf("Ellipsis(a€b, 2) = %q", got)
	}
}
