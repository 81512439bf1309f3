package builtin

import (
	"fmt"
	"slices"
	"strings"
)

// diff.go computes line diffs (Myers' O(ND) algorithm after trimming the common prefix and
// suffix) and renders them as unified diffs that parsePatch reads back.

const (
	diffContext = 3   // context lines around each change
	diffMaxD    = 512 // edit distance searched before falling back to one replace block
)

// diffOp is one line of an edit script: ' ' keeps a[a] (= b[b]), '-' deletes a[a], '+'
// inserts b[b]. a and b are also the positions in the other sequence, so every op knows how
// many lines of each side precede it.
type diffOp struct {
	kind byte
	a, b int
}

// diffLines returns an edit script turning a into b.
func diffLines(a, b []string) []diffOp {
	ids := map[string]int{}
	intern := func(lines []string) []int {
		out := make([]int, len(lines))
		for i, l := range lines {
			id, ok := ids[l]
			if !ok {
				id = len(ids)
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	x, y := intern(a), intern(b)
	pre := 0
	for pre < len(x) && pre < len(y) && x[pre] == y[pre] {
		pre++
	}
	suf := 0
	for suf < len(x)-pre && suf < len(y)-pre && x[len(x)-1-suf] == y[len(y)-1-suf] {
		suf++
	}
	mid, ok := myers(x[pre:len(x)-suf], y[pre:len(y)-suf], diffMaxD)
	if !ok {
		mid = mid[:0]
		for range len(x) - pre - suf {
			mid = append(mid, '-')
		}
		for range len(y) - pre - suf {
			mid = append(mid, '+')
		}
	}
	ops := make([]diffOp, 0, len(x)+len(y))
	i, j := 0, 0
	emit := func(k byte) {
		ops = append(ops, diffOp{k, i, j})
		switch k {
		case ' ':
			i, j = i+1, j+1
		case '-':
			i++
		case '+':
			j++
		}
	}
	for range pre {
		emit(' ')
	}
	for _, k := range mid {
		emit(k)
	}
	for range suf {
		emit(' ')
	}
	return ops
}

// myers returns the shortest edit script between a and b as a sequence of ' ', '-' and '+',
// or ok=false when it needs more than maxD edits.
func myers(a, b []int, maxD int) (script []byte, ok bool) {
	n, m := len(a), len(b)
	if n+m == 0 {
		return nil, true
	}
	maxD = min(maxD, n+m)
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	// trace[d] holds v[k] for k in [-d-1, d+1] as it was before step d.
	var trace [][]int
	for d := 0; d <= maxD; d++ {
		trace = append(trace, append([]int(nil), v[off-d-1:off+d+2]...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(trace, n, m), true
			}
		}
	}
	return nil, false
}

func backtrack(trace [][]int, n, m int) []byte {
	var rev []byte
	x, y := n, m
	for d := len(trace) - 1; d >= 0; d-- {
		v := trace[d]
		at := func(k int) int { return v[k+d+1] }
		k := x - y
		var pk int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := at(pk)
		py := px - pk
		for x > px && y > py {
			rev = append(rev, ' ')
			x, y = x-1, y-1
		}
		if d > 0 {
			if x == px {
				rev = append(rev, '+')
			} else {
				rev = append(rev, '-')
			}
		}
		x, y = px, py
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

// unifiedDiff renders the change from old to new as a unified diff with "--- a/<oldName>" and
// "+++ b/<newName>" headers. The result is cut at a line boundary once it passes maxBytes
// (truncated is then true and a last line says so). Identical inputs give "".
func unifiedDiff(oldName, newName, old, new string, maxBytes int) (diff string, truncated bool) {
	a, b := slices.Collect(strings.Lines(old)), slices.Collect(strings.Lines(new))
	ops := diffLines(a, b)
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n", quoteName("a/"+oldName), quoteName("b/"+newName))
	header := sb.Len()
	for _, h := range hunkRanges(ops, diffContext) {
		var oldN, newN int
		for _, op := range ops[h[0]:h[1]] {
			if op.kind != '+' {
				oldN++
			}
			if op.kind != '-' {
				newN++
			}
		}
		first := ops[h[0]]
		oldStart, newStart := first.a, first.b
		if oldN > 0 {
			oldStart++
		}
		if newN > 0 {
			newStart++
		}
		var hb strings.Builder
		fmt.Fprintf(&hb, "@@ -%s +%s @@\n", hunkRange(oldStart, oldN), hunkRange(newStart, newN))
		for _, op := range ops[h[0]:h[1]] {
			line := ""
			if op.kind == '+' {
				line = b[op.b]
			} else {
				line = a[op.a]
			}
			hb.WriteByte(op.kind)
			hb.WriteString(line)
			if !strings.HasSuffix(line, "\n") {
				hb.WriteString("\n\\ No newline at end of file\n")
			}
		}
		if sb.Len()+hb.Len() > maxBytes {
			// Keep whole lines of this hunk while they fit, then say the diff was cut.
			for _, l := range strings.SplitAfter(hb.String(), "\n") {
				if sb.Len()+len(l) > maxBytes {
					break
				}
				sb.WriteString(l)
			}
			sb.WriteString("... (diff truncated)\n")
			return sb.String(), true
		}
		sb.WriteString(hb.String())
	}
	if sb.Len() == header {
		return "", false
	}
	return sb.String(), false
}

func hunkRange(start, n int) string {
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}

// hunkRanges groups the changes of ops into hunks [start, end) with ctx lines of context
// around each change; changes closer than 2*ctx share a hunk.
func hunkRanges(ops []diffOp, ctx int) [][2]int {
	var out [][2]int
	i := 0
	for i < len(ops) {
		for i < len(ops) && ops[i].kind == ' ' {
			i++
		}
		if i == len(ops) {
			break
		}
		start := max(0, i-ctx)
		end := i
		for {
			for end < len(ops) && ops[end].kind != ' ' {
				end++
			}
			next := end
			for next < len(ops) && ops[next].kind == ' ' {
				next++
			}
			if next < len(ops) && next-end <= 2*ctx {
				end = next
				continue
			}
			end = min(len(ops), end+ctx)
			break
		}
		out = append(out, [2]int{start, end})
		i = end
	}
	return out
}
