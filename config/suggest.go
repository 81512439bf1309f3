package config

import "strings"

// suggest returns the known name closest to got, or "" if none is close enough to be a likely
// typo. Case, '_' and '-' are ignored ("timeout_ms" → "timeoutMs"), one edit per three characters
// is tolerated ("timoutMs" → "timeoutMs"), a truncated name of four or more characters matches
// its completion ("memoryLimit" → "memoryLimitBytes"), and a long name matches an extension of
// itself ("compileCacheDirectory" → "compileCacheDir").
func suggest(got string, known []string) string {
	g := fold(got)
	best, bestDist := "", -1
	for _, k := range known {
		n := fold(k)
		d := editDistance(g, n)
		ok := d <= max(1, len(n)/3)
		if len(g) >= 4 && strings.HasPrefix(n, g) || len(n) >= 8 && strings.HasPrefix(g, n) {
			ok = true
		}
		if ok && (bestDist < 0 || d < bestDist) {
			best, bestDist = k, d
		}
	}
	return best
}

func fold(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' {
			return -1
		}
		return r
	}, strings.ToLower(s))
}

// editDistance is the optimal string alignment distance (Levenshtein plus adjacent
// transpositions) in bytes. Inputs are short config keys, so quadratic is fine; overly long
// inputs are not worth comparing.
func editDistance(a, b string) int {
	const limit = 64
	if len(a) > limit || len(b) > limit {
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
