package trajtest

import (
	"sync"
	"testing"

	"github.com/codemode-go/codemode/api"
)

// Events and Count filter by kind in recording order, "" is everything, and recording from many
// goroutines loses nothing (run with -race).
func TestRecorder(t *testing.T) {
	var r Recorder
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				r.Record(api.TrajectoryEvent{Kind: api.EventNested})
			}
		}()
	}
	wg.Wait()
	r.Record(api.TrajectoryEvent{Kind: api.EventControl, CallID: "a"})
	r.Record(api.TrajectoryEvent{Kind: api.EventControl, CallID: "b"})
	if n := r.Count(api.EventNested); n != 400 {
		t.Fatalf("%d nested events, want 400", n)
	}
	if n := r.Count(""); n != 402 {
		t.Fatalf("%d events, want 402", n)
	}
	c := r.Events(api.EventControl)
	if len(c) != 2 || c[0].CallID != "a" || c[1].CallID != "b" {
		t.Fatalf("control events %+v", c)
	}
	all := r.Events("")
	all[0].Kind = "changed"
	if r.Events("")[0].Kind != api.EventNested {
		t.Fatal("Events returned the recorder's own slice")
	}
	if r.Count("none") != 0 {
		t.Fatal("events of a kind never recorded")
	}
}
