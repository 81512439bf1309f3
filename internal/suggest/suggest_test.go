package suggest

import (
	"strings"
	"testing"
)

func TestDistance(t *testing.T) {
	long := strings.Repeat("a", MaxCompared+1)
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "abc", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"timeoutms", "timoutms", 1},  // deletion
		{"timoutms", "timeoutms", 1},  // insertion
		{"getsum", "getsun", 1},       // substitution
		{"getsum", "gestum", 1},       // adjacent transposition counts once
		{"ca", "abc", 3},              // optimal string alignment, not full Damerau (2)
		{"kitten", "sitting", 3},      // the classic
		{long, long, MaxCompared + 1}, // too long to compare: no closer than replacing everything
		{long, "a", MaxCompared + 1},
		{strings.Repeat("a", MaxCompared), strings.Repeat("a", MaxCompared), 0},
	}
	for _, tc := range tests {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestTolerance(t *testing.T) {
	for n, want := range map[int]int{0: 1, 1: 1, 5: 1, 6: 2, 9: 3, 30: 10} {
		if got := Tolerance(n); got != want {
			t.Errorf("Tolerance(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestFold(t *testing.T) {
	tests := []struct {
		s, ignore, want string
	}{
		{"create_issue", "_-", "createissue"},
		{"create-Issue", "_-", "createissue"},
		{"createIssue", "_-", "createissue"},
		{"a.b c$d/e", "_-", "a.b c$d/e"},
		{"a.b c$d/e", "_-. $/", "abcde"},
		{"ÉTÉ_x", "_", "étéx"},
		{"", "_", ""},
	}
	for _, tc := range tests {
		if got := Fold(tc.s, tc.ignore); got != tc.want {
			t.Errorf("Fold(%q, %q) = %q, want %q", tc.s, tc.ignore, got, tc.want)
		}
	}
}

// FuzzDistance: Distance is a bounded, symmetric measure whatever the input.
func FuzzDistance(f *testing.F) {
	f.Add("getSum", "get_sum")
	f.Add("", "x")
	f.Add("ab", "ba")
	f.Fuzz(func(t *testing.T, a, b string) {
		d := Distance(a, b)
		if d != Distance(b, a) {
			t.Fatalf("Distance(%q, %q) = %d, not symmetric", a, b, d)
		}
		if d < max(len(a), len(b))-min(len(a), len(b)) || d > max(len(a), len(b)) {
			t.Fatalf("Distance(%q, %q) = %d, out of bounds", a, b, d)
		}
		if (d == 0) != (a == b) && len(a) <= MaxCompared && len(b) <= MaxCompared {
			t.Fatalf("Distance(%q, %q) = %d", a, b, d)
		}
	})
}
