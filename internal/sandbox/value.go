package sandbox

import (
	"slices"
	"unicode/utf8"

	"github.com/codemode-go/codemode/internal/quickjs"
)

// ValueSpiller is optionally implemented by a Host: a final value that does not fit the result's
// output budget is handed to Spill instead of failing the cell with output_limit_exceeded
// (issue 22 item 2). The host keeps the value whole where a later cell can load it and returns
// the JSON that stands for it in the result: a bounded preview and a reference.
type ValueSpiller interface {
	// SpillLimit is the largest value, in bytes of JSON, the host can keep whole. Larger values
	// reach Spill as a prefix only.
	SpillLimit() int
	// Spill returns the JSON that replaces an oversized value in the result: at most
	// v.Budget bytes as json.Marshal writes it. It runs on the VM goroutine.
	Spill(v Oversized) []byte
}

// Oversized is a final value that did not fit its result.
type Oversized struct {
	// JSON is the value's JSON text: all of it when Complete, else its first bytes (cut on a
	// rune boundary).
	JSON     []byte
	Complete bool
	// Total is the value's full size in bytes.
	Total int
	// Budget is what the replacement may take in the result.
	Budget int
	// MaxOutputBytes is the configured limit (for the explanation).
	MaxOutputBytes int
	// RestartSafe runs keep nothing (W6): the replacement can only be a truncated preview.
	RestartSafe bool
	// Untrusted are the sources of untrusted content the cell received (see Call.Untrusted).
	Untrusted []string
}

// previewPrefix bounds the prefix read of a value the host cannot keep.
const previewPrefix = 64 << 10

// valueText reads the encoded final value s. A value within budget is returned as it is; a
// larger one goes to the host's ValueSpiller when there is one (else the caller fails the cell).
func (r *Run) valueText(vm *quickjs.VM, s quickjs.Value, budget int) (string, error) {
	sp, ok := r.host.(ValueSpiller)
	if !ok || budget <= 0 {
		return vm.ToString(s, max(budget, 0))
	}
	limit := max(budget, previewPrefix)
	if !r.restartSafe {
		limit = max(limit, sp.SpillLimit())
	}
	text, total, err := vm.ToStringPrefix(s, limit)
	if err != nil {
		return "", err
	}
	complete := total == len(text)
	if complete && jsonCost(text, false) <= budget {
		return text, nil
	}
	if !complete {
		text = text[:runeStart(text, len(text))]
	}
	return string(sp.Spill(Oversized{JSON: []byte(text), Complete: complete, Total: total, Budget: budget,
		MaxOutputBytes: r.maxOut, RestartSafe: r.restartSafe, Untrusted: r.provenance()})), nil
}

// runeStart is the largest cut ≤ n on a rune boundary of s.
func runeStart(s string, n int) int {
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

// maxProvenance bounds the sources a run remembers.
const maxProvenance = 32

// Untrusted marks the call's result as carrying content from sources the operator does not
// control (an MCP server not configured as trusted, a web page, a client): once the result is
// delivered into the VM, every result of the run names those sources (api.ExecResult.Untrusted),
// so that what the cell prints or returns reaches the model inside the untrusted-content
// marking. Call it from Host.Async before it returns.
func (c *Call) Untrusted(sources ...string) {
	c.untrusted = addSources(c.untrusted, sources...)
}

// Provenance is the run's untrusted sources so far (for a value the cell saves).
func (c *Call) Provenance() []string {
	r := c.run
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.untrusted)
}

// addSources adds sources to a sorted, bounded set.
func addSources(set []string, sources ...string) []string {
	for _, s := range sources {
		if s == "" {
			continue
		}
		i, found := slices.BinarySearch(set, s)
		if found {
			continue
		}
		if len(set) >= maxProvenance {
			s = "…"
			if i, found = slices.BinarySearch(set, s); found {
				continue
			}
		}
		set = slices.Insert(set, i, s)
	}
	return set
}

// taint records the sources of a delivered result.
func (r *Run) taint(sources []string) {
	if len(sources) == 0 {
		return
	}
	r.mu.Lock()
	r.untrusted = addSources(r.untrusted, sources...)
	r.mu.Unlock()
}

// provenance is a copy of the run's untrusted sources (nil when none).
func (r *Run) provenance() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.untrusted)
}
