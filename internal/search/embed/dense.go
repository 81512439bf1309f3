package embed

import (
	"sort"
)

// Rank returns the positions of the k vectors most similar to q (cosine: all are unit length),
// best first, ties by position.
func Rank(vecs [][]float32, q []float32, k int, keep func(int) bool) []int {
	type sc struct {
		i int
		s float32
	}
	all := make([]sc, 0, len(vecs))
	for i, v := range vecs {
		if len(v) != len(q) || (keep != nil && !keep(i)) {
			continue
		}
		var d float32
		for j := range v {
			d += v[j] * q[j]
		}
		all = append(all, sc{i, d})
	}
	sort.SliceStable(all, func(a, b int) bool { return all[a].s > all[b].s })
	if len(all) > k {
		all = all[:k]
	}
	out := make([]int, len(all))
	for i, s := range all {
		out[i] = s.i
	}
	return out
}

// RRFK is reciprocal rank fusion's constant (the value of Cormack et al., used by most systems).
const RRFK = 60

// Fuse merges rankings (positions, best first) by reciprocal rank fusion, Σ 1/(RRFK + rank),
// and returns at most k positions, best first; ties keep the first ranking's order, then
// position.
func Fuse(k int, rankings ...[]int) []int {
	score := map[int]float64{}
	first := map[int]int{}
	order := 0
	for _, r := range rankings {
		for rank, p := range r {
			score[p] += 1 / float64(RRFK+rank+1)
			if _, ok := first[p]; !ok {
				first[p] = order
				order++
			}
		}
	}
	out := make([]int, 0, len(score))
	for p := range score {
		out = append(out, p)
	}
	sort.Slice(out, func(a, b int) bool {
		if score[out[a]] != score[out[b]] {
			return score[out[a]] > score[out[b]]
		}
		return first[out[a]] < first[out[b]]
	})
	if len(out) > k {
		out = out[:k]
	}
	return out
}
