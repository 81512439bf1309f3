package codemode

import (
	"encoding/json"
	"testing"

	"github.com/codemode-go/codemode/api"
)

// coldMode turns hot VMs off in newRuntime (set only by TestColdResume); durableMode gives it a
// shared run store (set only by TestDurableResume).
var (
	coldMode    bool
	durableMode bool
)

// TestColdResume runs every suspend/resume test again with hot VMs off (issue 15): a wait that
// restores a snapshot must behave exactly like one that continues the live VM.
func TestColdResume(t *testing.T) {
	coldMode = true
	defer func() { coldMode = false }()
	for name, f := range suspendResumeTests() {
		t.Run(name, f)
	}
}

// suspendResumeTests are the tests that suspend and resume runs, run again in other modes.
func suspendResumeTests() map[string]func(*testing.T) {
	return map[string]func(*testing.T){
		"WaitLifecycle":               TestWaitLifecycle,
		"ConcurrentWait":              TestConcurrentWait,
		"SuspendedRunCap":             TestSuspendedRunCap,
		"SnapshotExpiry":              TestSnapshotExpiry,
		"RestartSafe":                 TestRestartSafe,
		"SuspendedLimits":             TestSuspendedLimits,
		"NoLeaksAfterCancelAndExpiry": TestNoLeaksAfterCancelAndExpiry,
		"ApprovalSuspends":            TestApprovalSuspendsAndNothingReruns,
		"DecideFailsCleanly":          TestDecideFailsCleanly,
		"ApprovalExpiry":              TestApprovalExpiry,
		"NamespaceSuspendAndRemoval":  TestNamespaceSuspendAndRemoval,
		"Trajectory":                  TestTrajectory,
		"UnawaitedWorkRuns":           TestUnawaitedWorkRuns,
		"SnapshotLimitHotAndCold":     TestSnapshotLimitHotAndCold, // issue 22 item 5
		"ResultsAcrossCells":          TestResultsAcrossCells,      // issue 22 item 1
	}
}

func TestHotRunsAreHot(t *testing.T) { // issue 15: by default a suspended run keeps its VM, within bounds
	rt := newRuntime(t, testConfig(t), func(o *Options) { o.HotRuns = 2 })
	s := rt.Activate(api.RunContext{SessionKey: "s"}, nil)
	var ids []string
	for i := 0; i < 3; i++ {
		r := execCode(t, s, `await yield_control(); return 1`)
		ids = append(ids, r.RunID)
	}
	st := rt.Stats()
	if st.HotRuns != 2 || st.HotEvictions != 1 || st.SuspendedRuns != 3 || st.HotBytes == 0 {
		t.Fatalf("%+v", st)
	}
	for _, id := range ids {
		in, _ := json.Marshal(map[string]string{"runId": id})
		mustComplete(t, waitRaw(s, "w", in))
	}
	if st := rt.Stats(); st.HotRuns != 0 || st.SuspendedRuns != 0 {
		t.Fatalf("%+v", st)
	}
}
