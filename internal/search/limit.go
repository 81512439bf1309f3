package search

// Defaults of the code-mode configuration (docs/semantics.md, C2: searchDefaultLimit,
// maxSearchLimit).
const (
	DefaultLimit = 8
	MaxLimit     = 50
)

// EffectiveLimit applies the configured limit rules (docs/semantics.md, K5) to the limit a
// guest passed to tools.search / MCP.$search. requested <= 0 means "not given"
// and yields defaultLimit; the result is clamped to [1, maxLimit]. A maxLimit
// outside 1–MaxLimit is treated as MaxLimit, a defaultLimit <= 0 as
// DefaultLimit (configuration validation rejects both earlier; this keeps the
// search side total).
func EffectiveLimit(requested, defaultLimit, maxLimit int) int {
	if maxLimit < 1 || maxLimit > MaxLimit {
		maxLimit = MaxLimit
	}
	if defaultLimit <= 0 {
		defaultLimit = DefaultLimit
	}
	l := requested
	if l <= 0 {
		l = defaultLimit
	}
	return min(l, maxLimit)
}
