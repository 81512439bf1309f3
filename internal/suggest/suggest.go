// Package suggest holds what "did you mean" messages are measured with: the distance between a
// name someone typed and the names that exist, after folding away the differences that do not
// make a different name. The catalog uses it for names a cell reaches for that do not exist
// (tools.<name>, MCP.<server>, catalog ids); the configuration's unknown-key messages measure
// keys the same way.
package suggest

import "strings"

// MaxCompared bounds the inputs Distance compares: the work is quadratic, and a name that long
// is no typo of a short one.
const MaxCompared = 64

// Distance is the optimal string alignment distance between a and b — Levenshtein plus
// transpositions of adjacent bytes — in bytes. When either input is longer than MaxCompared
// bytes they are not compared, and the result is the longer length (no closer than
// replacing everything).
func Distance(a, b string) int {
	if len(a) > MaxCompared || len(b) > MaxCompared {
		return max(len(a), len(b))
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// Tolerance is the distance still taken for a typo of a name of n bytes: one edit per three
// bytes, and at least one.
func Tolerance(n int) int { return max(1, n/3) }

// Fold lowercases s and drops every rune of ignore, so that spellings that differ only in case
// and separators compare equal: with ignore "_-", create_issue, create-issue and createIssue
// all fold to createissue.
func Fold(s, ignore string) string {
	return strings.Map(func(r rune) rune {
		if strings.ContainsRune(ignore, r) {
			return -1
		}
		return r
	}, strings.ToLower(s))
}
