package durable

import (
	"strings"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/runstore"
)

// The lifecycle itself (suspend, wait, takeover, drain) is tested through the root package's
// Surface, which is what drives it: TestDurableResume, TestDurableFleet,
// TestDurableRecordsFailClearly, TestDurableStoreDown, and internal/fleettest with real
// processes. These are the pure parts.

func TestPrefix(t *testing.T) {
	long := strings.Repeat("x", maxDurableCallID+1)
	for _, tc := range []struct {
		in   string
		kept bool
	}{
		{"exec-1", true},
		{strings.Repeat("x", maxDurableCallID), true},
		{long, false},
		{"", false},
		{"a#drive", false}, // '#' would collide with the store's own keys
	} {
		got := Prefix(tc.in)
		if kept := got == tc.in; kept != tc.kept {
			t.Errorf("Prefix(%q) = %q, kept %v, want %v", tc.in, got, kept, tc.kept)
		}
		if !tc.kept && (!strings.HasPrefix(got, "x-") || len(got) != 2+24 || Prefix(tc.in) != got) {
			t.Errorf("Prefix(%q) = %q: want a stable digest", tc.in, got)
		}
		if err := runstore.CheckName(got + "/1"); err != nil {
			t.Errorf("Prefix(%q) = %q is not a valid key: %v", tc.in, got, err)
		}
	}
}

func TestBusy(t *testing.T) { // W3, issue 20 item 3: busy carries the runId and when to retry
	res := Busy("r1", &runstore.BusyError{RetryAfter: 1500 * time.Millisecond})
	if res.Status != api.StatusFailed || res.Code != api.CodeBusy || res.RunID != "r1" || res.RetryAfterMs != 1500 ||
		!strings.HasSuffix(res.Error, "Retry the same wait after retryAfterMs.") {
		t.Fatalf("%+v", res)
	}
	if res := Busy("r1", runstore.ErrBusy); res.RetryAfterMs != 1 { // never 0: 0 would read as "no hint"
		t.Fatalf("%+v", res)
	}
}

func TestCallsThatRan(t *testing.T) { // issue 20 item 4: a failed write names what already ran
	for _, tc := range []struct {
		name      string
		delivered []string
		pending   []api.PendingToolCall
		want      []string
		not       []string
	}{
		{name: "nothing", want: nil},
		{name: "completed and cancelled", delivered: []string{"c/1"},
			pending: []api.PendingToolCall{{ID: "c/2", Tool: "native:core:exec"}, {ID: "c/3", Tool: "yield_control"}},
			want:    []string{"1 nested call(s) had already completed, and their effects happened: c/1", "1 were still running and were cancelled", "native:core:exec (c/2)"},
			not:     []string{"yield_control"}},
		{name: "capped", delivered: strings.Split(strings.Repeat("c/x ", 25), " ")[:25],
			want: []string{"25 nested call(s)", "… 5 more"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := callsThatRan(tc.delivered, tc.pending)
			if len(tc.want) == 0 && got != "" {
				t.Fatalf("%q", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("%q names %q", got, n)
				}
			}
		})
	}
}

func TestSameLayout(t *testing.T) {
	rec := map[string]string{"a": "1", "b": "2"}
	if err := sameLayout(rec, map[string]string{"a": "1", "b": "2", "c": "3"}); err != nil {
		t.Fatal(err) // a namespace the run never used may be added
	}
	if err := sameLayout(rec, map[string]string{"a": "1", "b": "9"}); err == nil || !strings.Contains(err.Error(), `"b"`) {
		t.Fatalf("%v", err)
	}
	if err := sameLayout(rec, map[string]string{"a": "1"}); err == nil {
		t.Fatal("a namespace gone on this replica")
	}
}
