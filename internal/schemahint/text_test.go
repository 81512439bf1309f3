package schemahint

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/codemode-go/codemode/internal/jsname"
)

func TestCleanDoc(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		max     int
		oneLine bool
		want    string
	}{
		{"plain", "Create a GitHub issue.", 600, false, "Create a GitHub issue."},
		{"close comment", "a */ b", 600, false, `a *\/ b`},
		{"open comment", "a /* b", 600, false, `a /\* b`},
		{"chained", "*/*/", 600, false, `*\/\*\/`},
		{"empty comment", "/**/", 600, false, `/\**\/`},
		{"tag at line start", "x\n@param owner evil\n  @returns y", 600, false, "x\n\\@param owner evil\n\\@returns y"},
		{"tag at start", "@deprecated", 600, false, `\@deprecated`},
		{"tag mid-line", "mail me@example.com", 600, false, "mail me@example.com"},
		{"crlf and separators", "a\r\nb\rc\u2028d\u2029e\u0085f", 600, false, "a\nb\nc\nd\ne\nf"},
		{"blank lines collapse", "a\n\n\n\n b  \n\n", 600, false, "a\n\nb"},
		{"leading blank", "\n\n  a", 600, false, "a"},
		{"tabs", "a\tb", 600, false, "a b"},
		{"controls removed", "a\x00b\x1b[0mc\x7fd", 600, false, "ab[0mcd"},
		{"format chars removed", "a\u202eb\u200bc\ufeffd", 600, false, "abcd"},
		{"invalid utf8 removed", "a\xffb", 600, false, "ab"},
		{"one line", "a\n\nb   c\td", 600, true, "a b c d"},
		{"truncate at space", "the quick brown fox jumps", 12, false, "the quick…"},
		{"truncate mid-word", "abcdefghijklmnop", 6, false, "abcde…"},
		{"truncate runes", "ééééééééé", 4, false, "ééé…"},
		{"fits exactly", "abcdef", 6, false, "abcdef"},
		{"zero max", "abc", 0, false, ""},
		{"only spaces", " \n\t ", 10, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := cleanDoc(tc.in, tc.max, tc.oneLine)
			if got != tc.want {
				t.Errorf("cleanDoc(%q, %d, %v) = %q, want %q", tc.in, tc.max, tc.oneLine, got, tc.want)
			}
			if strings.Contains(got, "*/") || strings.Contains(got, "/*") {
				t.Errorf("comment delimiter in %q", got)
			}
			if n := utf8.RuneCountInString(strings.NewReplacer(`\/`, "/", `\*`, "*", `\@`, "@").Replace(got)); tc.max > 0 && n > tc.max {
				t.Errorf("%d runes > %d", n, tc.max)
			}
		})
	}
}

func TestQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", `"plain"`},
		{`a"b\c`, `"a\"b\\c"`},
		{"a\nb\rc\td", `"a\nb\rc\td"`},
		{"\x00\x1f\x7f", `"\u0000\u001f\u007f"`},
		{"\u2028\u2029", `"\u2028\u2029"`},
		{"bidi\u202e", `"bidi\u202e"`},
		{"zw\u200b", `"zw\u200b"`},
		{"é 日本 😀", `"é 日本 😀"`},
		{"\U000E0041", `"\udb40\udc41"`}, // a tag character (format): escaped as a surrogate pair
		{"bad\xff", `"bad\ufffd"`},
		{"*/", `"*/"`},
	}
	for _, tc := range tests {
		if got := quote(tc.in); got != tc.want {
			t.Errorf("quote(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestIdentifiers(t *testing.T) {
	for _, name := range []string{"a", "_x", "$api", "createIssue", "a1", "__proto__", "constructor", "type"} {
		if !IsIdentifier(name) {
			t.Errorf("IsIdentifier(%q) = false", name)
		}
	}
	for _, name := range []string{"", "1a", "a-b", "a b", "delete", "default", "new", "import", "eval", "naïve", "a\n"} {
		if IsIdentifier(name) {
			t.Errorf("IsIdentifier(%q) = true", name)
		}
	}
	for in, want := range map[string]string{"delete": "delete_", "a-b": "a_b", "1x": "_1x", "": "_", "ok": "ok", "a b\n": "a_b_"} {
		if got, _ := declName(in); got != want || !IsIdentifier(got) {
			t.Errorf("declName(%q) = %q, want %q", in, got, want)
		}
	}
	if jsname.IsIdent("default") != true || jsname.IsIdent("a-b") {
		t.Error("isIdentName")
	}
}
