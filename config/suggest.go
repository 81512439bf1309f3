package config

import (
	"strings"

	dym "github.com/codemode-go/codemode/internal/suggest"
)

// suggest returns the known name closest to got, or "" if none is close enough to be a likely
// typo. Case, '_' and '-' are ignored ("timeout_ms" → "timeoutMs"), one edit per three characters
// is tolerated ("timoutMs" → "timeoutMs"), a truncated name of four or more characters matches
// its completion ("memoryLimit" → "memoryLimitBytes"), and a long name matches an extension of
// itself ("compileCacheDirectory" → "compileCacheDir").
func suggest(got string, known []string) string {
	g := dym.Fold(got, "_-")
	best, bestDist := "", -1
	for _, k := range known {
		n := dym.Fold(k, "_-")
		d := dym.Distance(g, n)
		ok := d <= dym.Tolerance(len(n))
		if len(g) >= 4 && strings.HasPrefix(n, g) || len(n) >= 8 && strings.HasPrefix(g, n) {
			ok = true
		}
		if ok && (bestDist < 0 || d < bestDist) {
			best, bestDist = k, d
		}
	}
	return best
}
