package trajectory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
)

func dropped(t *testing.T, evs []api.TrajectoryEvent) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, ev := range evs {
		if ev.Kind != api.EventDropped {
			continue
		}
		var d struct {
			Count  int
			Reason string
		}
		if err := json.Unmarshal(ev.Result, &d); err != nil || d.Count == 0 || d.Reason == "" {
			t.Fatalf("malformed marker %s: %v", ev.Result, err)
		}
		out[ev.CallID+" "+d.Reason] += d.Count
	}
	return out
}

// One exec's nested calls beyond MaxEventsPerCall are counted, and the count is said before the
// exec's own record (issue 18 item 6: a loop of failing nested calls grew a log by 101 MB in 10 s).
func TestWriterBoundsEventsPerCall(t *testing.T) {
	var buf bytes.Buffer
	w := NewLimitedWriter(&buf, Limits{MaxEventsPerCall: 100})
	run := api.RunContext{SessionKey: "s"}
	for i := range 25_000 {
		w.Record(api.TrajectoryEvent{Kind: api.EventNested, Run: run, CallID: fmt.Sprintf("exec_1/%d", i), ParentCallID: "exec_1",
			Tool: "native:core:read", Status: "error", Error: "no such file"})
	}
	w.Record(api.TrajectoryEvent{Kind: api.EventNested, Run: run, CallID: "exec_2/0", ParentCallID: "exec_2", Tool: "t", Status: "ok"})
	w.Record(api.TrajectoryEvent{Kind: api.EventControl, Run: run, CallID: "exec_1", Tool: "exec", Status: "completed"})
	evs, bad, err := Read(&buf)
	if err != nil || len(bad) > 0 {
		t.Fatal(err, bad)
	}
	if n := len(evs); n != 100+1+1+1 { // exec_1's first 100, exec_2's one, the marker, the exec
		t.Fatalf("%d events", n)
	}
	if got := dropped(t, evs); got["exec_1 maxEventsPerCall"] != 24_900 || len(got) != 1 {
		t.Fatalf("markers %v", got)
	}
	if evs[len(evs)-2].Kind != api.EventDropped || evs[len(evs)-1].Kind != api.EventControl || w.Dropped() != 24_900 {
		t.Fatalf("order: %s, %s; dropped %d", evs[len(evs)-2].Kind, evs[len(evs)-1].Kind, w.Dropped())
	}
	var out bytes.Buffer
	Render(&out, evs, RenderOptions{})
	if !strings.Contains(out.String(), "not recorded: 24900 nested calls, approvals and updates of this exec were not recorded") {
		t.Fatalf("trace:\n%s", out.String())
	}
}

// Progress updates of one nested call are coalesced to UpdateBurst per interval and the last;
// the rest are counted when the call ends (an upstream's progress flood grew a log by 63 MB).
func TestWriterCoalescesUpdates(t *testing.T) {
	var buf bytes.Buffer
	w := NewLimitedWriter(&buf, Limits{UpdateInterval: time.Second})
	start := time.Now()
	for i := range 5000 {
		w.Record(api.TrajectoryEvent{Kind: api.EventUpdate, Time: start.Add(time.Duration(i) * time.Millisecond), CallID: "e/1",
			ParentCallID: "e", Tool: "mcp:s:slow", Update: &api.ContentBlock{Type: "text", Text: fmt.Sprint(i)}})
	}
	w.Record(api.TrajectoryEvent{Kind: api.EventNested, CallID: "e/1", ParentCallID: "e", Tool: "mcp:s:slow", Status: "ok"})
	evs, _, _ := Read(&buf)
	updates := 0
	for _, ev := range evs {
		if ev.Kind == api.EventUpdate {
			updates++
		}
	}
	// UpdateBurst at 0 s, 1 s, 2 s, 3 s and 4 s, and the last one when the call ends.
	if updates != 5*UpdateBurst+1 {
		t.Fatalf("%d updates recorded", updates)
	}
	var last string
	for _, ev := range evs {
		if ev.Kind == api.EventUpdate {
			last = ev.Update.Text
		}
	}
	if last != "4999" {
		t.Fatalf("the last update recorded is %q", last)
	}
	if got := dropped(t, evs); got["e/1 updateIntervalMs"] != 5000-5*UpdateBurst-1 {
		t.Fatalf("markers %v", got)
	}
}

// A file past MaxBytes is rotated; at most MaxFiles rotated files are kept, so the log never
// takes more than (MaxFiles+1) × MaxBytes, and every file holds whole events.
func TestWriterRotates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	const maxBytes = 64 << 10
	w, err := CreateLimited(path, Limits{MaxBytes: maxBytes, MaxFiles: 2})
	if err != nil {
		t.Fatal(err)
	}
	big := json.RawMessage(`"` + strings.Repeat("x", 1000) + `"`)
	for i := range 1000 { // ~1 MB of control events: never dropped, always rotated
		w.Record(api.TrajectoryEvent{Kind: api.EventControl, CallID: fmt.Sprint(i), Tool: "exec", Status: "completed", Result: big})
	}
	if err := w.Close(); err != nil || w.Err() != nil {
		t.Fatal(err, w.Err())
	}
	names, _ := filepath.Glob(path + "*")
	if len(names) != 3 {
		t.Fatalf("files %v", names)
	}
	total := int64(0)
	last := -1
	for _, name := range []string{path + ".2", path + ".1", path} {
		st, err := os.Stat(name)
		if err != nil || st.Size() > maxBytes || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", name, st, err)
		}
		total += st.Size()
		f, _ := os.Open(name)
		evs, bad, err := Read(f)
		f.Close()
		if err != nil || len(bad) > 0 || len(evs) == 0 {
			t.Fatalf("%s: %d events, %v %v", name, len(evs), bad, err)
		}
		var first int
		fmt.Sscan(evs[0].CallID, &first)
		if first <= last {
			t.Fatalf("%s starts at %d after %d: rotated out of order", name, first, last)
		}
		fmt.Sscan(evs[len(evs)-1].CallID, &last)
	}
	if last != 999 || total > 3*maxBytes {
		t.Fatalf("last event %d, %d bytes in all", last, total)
	}
	// Reopening appends to the current file and goes on rotating from its size.
	w, _ = CreateLimited(path, Limits{MaxBytes: maxBytes, MaxFiles: 2})
	w.Record(api.TrajectoryEvent{Kind: api.EventControl, CallID: "1000", Tool: "exec", Status: "completed", Result: big})
	w.Close()
	if st, _ := os.Stat(path); st.Size() > maxBytes {
		t.Fatalf("reopened file grew to %d", st.Size())
	}
}

// Close says what is still only counted.
func TestWriterCloseReportsCounts(t *testing.T) {
	var buf bytes.Buffer
	w := NewLimitedWriter(&buf, Limits{MaxEventsPerCall: 100})
	for i := range 150 {
		w.Record(api.TrajectoryEvent{Kind: api.EventNested, CallID: fmt.Sprintf("x/%d", i), ParentCallID: "x", Tool: "t", Status: "ok"})
	}
	w.Close()
	evs, _, _ := Read(&buf)
	if got := dropped(t, evs); got["x maxEventsPerCall"] != 50 {
		t.Fatalf("markers %v", got)
	}
}
