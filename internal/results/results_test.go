package results_test

import (
	"testing"

	"github.com/codemode-go/codemode/internal/results"
	"github.com/codemode-go/codemode/internal/results/resultstest"
)

func TestMemoryConformance(t *testing.T) { // issue 22 item 1
	resultstest.Run(t, func(t *testing.T, lim results.Limits) results.Store { return results.NewMemory(lim) })
}

func TestMemoryGlobalBound(t *testing.T) {
	st := results.NewMemory(results.Limits{MaxBytes: 1 << 20, MaxBytesPerOwner: 1 << 20, MaxBytesPerRun: 1 << 20})
	big := make([]byte, 600<<10)
	for i := range big {
		big[i] = '1'
	}
	if _, err := st.Save(t.Context(), resultstest.RunA, big, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Save(t.Context(), resultstest.Other, big, nil); !results.IsRefusal(err) {
		t.Fatalf("the store-wide bound did not hold: %v", err)
	}
	if n, b := st.Stats(); n != 1 || b != int64(len(big)) {
		t.Fatalf("%d entries, %d bytes", n, b)
	}
}
