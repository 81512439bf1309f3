package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/testtools/trajtest"
)

func testLimits() Limits {
	return Limits{MaxConcurrent: 2, MaxLive: 4, MaxTotal: 6, MaxDepth: 1, MaxRunning: 64, ChildTimeout: 5 * time.Second, MaxTurns: 5}
}

func payload(prompt string, opts map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"prompt": prompt, "options": opts})
	return b
}

// TestParseRequest: every option is checked; hostile values are refused with a TypeError that
// says what to do (issue 25 item 1).
func TestParseRequest(t *testing.T) {
	lim := testLimits()
	lim.Models = []string{"small", "big-*"}
	for _, tc := range []struct {
		payload string
		want    string // "" for accepted; else a substring of the error
	}{
		{`{"prompt":"do it","options":null}`, ""},
		{`{"prompt":"do it","options":{"label":" a\u0007b ","model":"big-1","phase":"P","schema":{"type":"object"}}}`, ""},
		{`{"prompt":"","options":null}`, "non-empty string"},
		{`{"prompt":"   ","options":null}`, "non-empty string"},
		{`{"prompt":42,"options":null}`, "non-empty string"},
		{`{"options":null}`, "non-empty string"},
		{`{"prompt":"x","options":"opts"}`, "must be an object"},
		{`{"prompt":"x","options":[1]}`, "must be an object"},
		{`{"prompt":"x","options":{"label":3}}`, "options.label must be a string"},
		{`{"prompt":"x","options":{"label":""}}`, "must not be empty"},
		{`{"prompt":"x","options":{"label":"` + strings.Repeat("l", MaxLabelBytes+1) + `"}}`, "bytes (limit"},
		{`{"prompt":"x","options":{"model":"other"}}`, `model "other" is not allowed`},
		{`{"prompt":"x","options":{"schema":"string"}}`, "must be a JSON Schema object"},
		{`{"prompt":"x","options":{"schema":[]}}`, "must be a JSON Schema object"},
		{`{"prompt":"x","options":{"thinking":"high"}}`, "not supported here"},
		{`{"prompt":"x","options":{"nope":1}}`, `unknown option "nope"`},
		{`{"prompt":"x","options":{"label":null}}`, ""},
		{`not json`, "malformed"},
	} {
		req, err := ParseRequest([]byte(tc.payload), lim)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.payload, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.payload, err, tc.want)
		case err != nil:
			var te *api.ToolError
			if !errors.As(err, &te) || te.Name != "TypeError" || te.Code != string(api.CodeInvalidInput) {
				t.Errorf("%s: %#v", tc.payload, err)
			}
		}
		if tc.want == "" && strings.Contains(tc.payload, "big-1") && (req.Label != "ab" || req.Model != "big-1" || req.Phase != "P" || string(req.Schema) != `{"type":"object"}`) {
			t.Errorf("%+v", req)
		}
	}
	big := strings.Repeat("p", MaxPromptBytes+1)
	if _, err := ParseRequest(payload(big, nil), lim); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("huge prompt: %v", err)
	}
	if _, err := ParseRequest(payload("x", map[string]any{"model": "anything"}), testLimits()); err != nil {
		t.Errorf("no model list: any model: %v", err)
	}
}

// FuzzParseRequest: the request is hostile bytes from a cell; parsing never panics, and what it
// accepts is within the bounds.
func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"prompt":"do it","options":{"label":"a","schema":{"type":"object"}}}`))
	f.Add([]byte(`{"prompt":"x","options":{"model":"\u0000","phase":"\u202e"}}`))
	f.Add([]byte(`{"prompt":["x"],"options":{}}`))
	lim := testLimits()
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := ParseRequest(b, lim)
		if err != nil {
			return
		}
		if strings.TrimSpace(req.Prompt) == "" || len(req.Prompt) > MaxPromptBytes || len(req.Label) > MaxLabelBytes+3 || len(req.Phase) > MaxNoteBytes+3 {
			t.Fatalf("accepted %+v", req)
		}
		_ = Label(b)
	})
}

// group starts a group whose children run spawn.
func group(t *testing.T, lim Limits, depth int, spawn Spawn) (*Group, *trajtest.Recorder) {
	t.Helper()
	rec := &trajtest.Recorder{}
	g := New(lim).NewGroup(GroupConfig{Run: api.RunContext{SessionKey: "s", RunID: "r"}, ParentCallID: "e", Depth: depth,
		Spawn: spawn, Trajectory: rec})
	return g, rec
}

func admitRun(t *testing.T, g *Group, n int, opts map[string]any) ([]byte, error) {
	t.Helper()
	id := fmt.Sprintf("e/%d", n)
	tk, err := g.Admit(id, payload(fmt.Sprintf("task %d", n), opts))
	if err != nil {
		return nil, err
	}
	v, _, err := g.Run(context.Background(), id, tk, nil)
	return v, err
}

// TestGroupLimits: depth, live and lifetime limits refuse launches with errors naming the
// setting; refused launches are recorded and counted (issue 25 item 4).
func TestGroupLimits(t *testing.T) {
	release := make(chan struct{})
	g, rec := group(t, testLimits(), 0, func(ctx context.Context, c *Child) Outcome {
		<-release
		return Outcome{Status: StatusCompleted, Text: c.Prompt}
	})
	var tickets []*Ticket
	for i := 1; i <= 4; i++ {
		tk, err := g.Admit(fmt.Sprintf("e/%d", i), payload("t", nil))
		if err != nil {
			t.Fatal(err)
		}
		tickets = append(tickets, tk)
	}
	_, err := g.Admit("e/5", payload("t", nil))
	if te := (*api.ToolError)(nil); !errors.As(err, &te) || te.Code != "too_many_agents" || !strings.Contains(te.Message, "maxChildrenPerGroup is 4") {
		t.Fatalf("live limit: %v", err)
	}
	var wg sync.WaitGroup
	for i, tk := range tickets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := g.Run(context.Background(), fmt.Sprintf("e/%d", i+1), tk, nil); err != nil {
				t.Error(err)
			}
		}()
	}
	close(release)
	wg.Wait()
	for i := 6; i <= 7; i++ {
		if _, err := admitRun(t, g, i, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := g.Admit("e/8", payload("t", nil)); err == nil || !strings.Contains(err.Error(), "maxTotalPerGroup is 6") {
		t.Fatalf("lifetime limit: %v", err)
	}
	deep, _ := group(t, testLimits(), 1, nil)
	if _, err := deep.Admit("e/1", payload("t", nil)); err == nil || !strings.Contains(err.Error(), "spawn depth 1") {
		t.Fatalf("depth: %v", err)
	}
	refused := 0
	for _, ev := range rec.Events(api.EventAgent) {
		if ev.Status == StatusRefused {
			refused++
		}
	}
	if refused != 2 || g.rt.Count(StatusRefused) != 2 || g.rt.Count(StatusCompleted) != 6 {
		t.Fatalf("refused %d, counts %d %d", refused, g.rt.Count(StatusRefused), g.rt.Count(StatusCompleted))
	}
}

// TestGroupFIFO: children past maxConcurrent wait in admission order — even when their calls
// reach Run in another order — and at most maxConcurrent run at once; a queued child whose run
// ends leaves the queue (issue 25 item 4).
func TestGroupFIFO(t *testing.T) {
	var mu sync.Mutex
	var order []string
	var running, most atomic.Int64
	release := make(chan struct{})
	g, _ := group(t, Limits{MaxConcurrent: 2, MaxLive: 10, MaxTotal: 10, MaxDepth: 1, MaxRunning: 10, ChildTimeout: time.Minute},
		0, func(ctx context.Context, c *Child) Outcome {
			n := running.Add(1)
			defer running.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			mu.Lock()
			order = append(order, c.Prompt)
			mu.Unlock()
			select {
			case <-release:
			case <-ctx.Done():
				return Outcome{Status: StatusCancelled}
			}
			return Outcome{Status: StatusCompleted}
		})
	const n = 6
	tickets := make([]*Ticket, n)
	for i := range tickets {
		tk, err := g.Admit(fmt.Sprintf("e/%d", i), payload(fmt.Sprintf("c%d", i), nil))
		if err != nil {
			t.Fatal(err)
		}
		tickets[i] = tk
	}
	// The calls reach Run in reverse order; a cancelled one drops out of the queue.
	cancelled, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	results := make([]error, n)
	for i := n - 1; i >= 0; i-- {
		ctx := context.Background()
		if i == 3 {
			ctx = cancelled
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, results[i] = g.Run(ctx, fmt.Sprintf("e/%d", i), tickets[i], nil)
		}()
		time.Sleep(time.Millisecond) // not for correctness: make the reverse arrival likely
	}
	if !waitUntil(func() bool { mu.Lock(); defer mu.Unlock(); return len(order) == 2 }) {
		t.Fatal("the first two did not start")
	}
	cancel()
	// One at a time: a slot that frees goes to the earliest waiting child (two slots freed at
	// once go in call order too, but which of the two goroutines runs first is the scheduler's).
	for i := 0; i < n-1; i++ {
		mu.Lock()
		before := len(order)
		mu.Unlock()
		release <- struct{}{}
		if before < n-1 && !waitUntil(func() bool { mu.Lock(); defer mu.Unlock(); return len(order) > before }) {
			t.Fatalf("after release %d no child started", i)
		}
	}
	wg.Wait()
	// The first two start together, so their order is the scheduler's; the rest is FIFO.
	if len(order) == n-1 && order[0] > order[1] {
		order[0], order[1] = order[1], order[0]
	}
	if strings.Join(order, ",") != "c0,c1,c2,c4,c5" || most.Load() != 2 {
		t.Fatalf("order %v, most %d", order, most.Load())
	}
	var te *api.ToolError
	if !errors.As(results[3], &te) || te.Code != StatusCancelled {
		t.Fatalf("the cancelled child: %v", results[3])
	}
	if g.live != 0 || g.running != 0 || len(g.queue) != 0 {
		t.Fatalf("left: live %d running %d queue %d", g.live, g.running, len(g.queue))
	}
}

func waitUntil(cond func() bool) bool {
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// TestResults: what the cell's promise gets for each outcome; a panicking runner and a child
// past its time fail cleanly.
func TestResults(t *testing.T) {
	lim := testLimits()
	lim.ChildTimeout = 50 * time.Millisecond
	for _, tc := range []struct {
		name  string
		spawn Spawn
		opts  map[string]any
		value string
		err   string
	}{
		{"text", func(context.Context, *Child) Outcome { return Outcome{Status: StatusCompleted, Text: "hi"} }, nil, `"hi"`, ""},
		{"structured", func(context.Context, *Child) Outcome {
			return Outcome{Status: StatusCompleted, Structured: json.RawMessage(`{"a":1}`), Text: "x"}
		}, map[string]any{"schema": map[string]any{"type": "object"}}, `{"a":1}`, ""},
		{"invalid", func(context.Context, *Child) Outcome {
			return Outcome{Status: StatusInvalid, Text: "raw", SchemaError: "no value"}
		}, map[string]any{"label": "L"}, "", `SwarmAgentError invalid agent r/e/1 invalid: no value {"label":"L","runId":"r/e/1","schemaError":"no value","status":"invalid","text":"raw"}`},
		{"panic", func(context.Context, *Child) Outcome { panic("boom") }, nil, "", "SwarmAgentError failed agent r/e/1 failed: the child agent failed: internal error (boom)"},
		{"timeout", func(ctx context.Context, c *Child) Outcome {
			<-ctx.Done()
			return Outcome{Status: StatusFailed, Error: ctx.Err().Error()}
		}, nil, "", "SwarmAgentError timeout agent r/e/1 timeout: the child ran longer than tools.swarm.childTimeoutSeconds (50ms)"},
		{"bad schema", nil, map[string]any{"schema": map[string]any{"type": 12}}, "", "TypeError invalid_input agents.run: options.schema is not usable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, rec := group(t, lim, 0, tc.spawn)
			v, err := admitRun(t, g, 1, tc.opts)
			if tc.err == "" {
				if err != nil || string(v) != tc.value {
					t.Fatalf("%s %v", v, err)
				}
				return
			}
			var te *api.ToolError
			if !errors.As(err, &te) {
				t.Fatalf("%s %v", v, err)
			}
			got := te.Name + " " + te.Code + " " + te.Message
			if len(te.Details) > 0 {
				got += " " + string(te.Details)
			}
			if !strings.Contains(got, tc.err) {
				t.Fatalf("%s\nwant %s", got, tc.err)
			}
			want := te.Code
			if te.Name == "TypeError" {
				want = StatusRefused
			}
			if evs := rec.Events(api.EventAgent); len(evs) != 1 || evs[0].Status != want || evs[0].ParentCallID != "e" {
				t.Fatalf("%+v", evs)
			}
		})
	}
}

// TestNotes: phase and log notes go to the trajectory and, in order, to the progress sink; past
// MaxNotes they are dropped with one last note (a log loop cannot flood the audit log).
func TestNotes(t *testing.T) {
	rec := &trajtest.Recorder{}
	var mu sync.Mutex
	var sent []string
	g := New(testLimits()).NewGroup(GroupConfig{Run: api.RunContext{RunID: "r"}, ParentCallID: "e", Trajectory: rec,
		Reporting: func() bool { return true },
		Report: func(msg string) {
			time.Sleep(10 * time.Microsecond) // a slow client
			mu.Lock()
			sent = append(sent, msg)
			mu.Unlock()
		}})
	for i := 0; i < MaxNotes+50; i++ {
		kind := "log"
		if i == 0 {
			kind = "phase"
		}
		if err := g.Note([]byte(fmt.Sprintf(`{"kind":%q,"text":"note %d\u001b[2J"}`, kind, i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Note([]byte(`{"kind":"other","text":"x"}`)); err == nil {
		t.Fatal("a note of an unknown kind")
	}
	g.FlushNotes()
	evs := rec.Events(api.EventUpdate)
	if len(evs) != MaxNotes+1 || evs[0].Update.Text != "phase: note 0[2J" || !strings.Contains(evs[MaxNotes].Update.Text, "dropped") {
		t.Fatalf("%d notes recorded; first %q last %q", len(evs), evs[0].Update.Text, evs[len(evs)-1].Update.Text)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) == 0 || len(sent) > maxRelayed+MaxNotes || sent[0] != "phase: note 0[2J" {
		t.Fatalf("%d sent, first %q", len(sent), sent[0])
	}
	for i := 1; i < len(sent)-1; i++ { // in order, whatever was dropped
		var a, b int
		fmt.Sscanf(sent[i-1], "log: note %d", &a)
		fmt.Sscanf(sent[i], "log: note %d", &b)
		if i > 1 && b <= a {
			t.Fatalf("out of order: %q then %q", sent[i-1], sent[i])
		}
	}
}

// TestCheckpoints: checkpoints are kept until the record exists, then written; a stored one
// reaches the child that continues; the group's counts cross with the record.
func TestCheckpoints(t *testing.T) {
	var got []byte
	step := make(chan struct{})
	g := New(testLimits()).NewGroup(GroupConfig{Run: api.RunContext{RunID: "r"}, ParentCallID: "e", Durable: true,
		Spawn: func(ctx context.Context, c *Child) Outcome {
			got = c.Resume
			c.Checkpoint([]byte("one"))
			step <- struct{}{}
			<-step
			c.Checkpoint([]byte("two"))
			return Outcome{Status: StatusCompleted}
		}})
	g.Resume("e/1", []byte("stored"))
	var mu sync.Mutex
	written := map[string]string{}
	done := make(chan error)
	go func() { _, _, err := g.Run(context.Background(), "e/1", nil, payload("x", nil)); done <- err }()
	<-step
	g.SetCheckpointSink(func(key string, data []byte) {
		mu.Lock()
		written[key] = string(data)
		mu.Unlock()
	})
	mu.Lock()
	if written["e/1#agent"] != "one" {
		t.Fatalf("%v", written)
	}
	mu.Unlock()
	step <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if string(got) != "stored" || written["e/1#agent"] != "two" {
		t.Fatalf("resume %q, written %v", got, written)
	}
	if id, ok := JournalCall(JournalKey("e/1")); !ok || id != "e/1" {
		t.Fatal(id)
	}
	if _, ok := JournalCall("e/1"); ok {
		t.Fatal("a call id is not a checkpoint key")
	}
	st := g.Export()
	h := New(testLimits()).NewGroup(GroupConfig{})
	h.Import(st)
	h.Import(json.RawMessage(`{"total":-5}`))
	h.Import(json.RawMessage(`garbage`))
	if h.total != 0 { // a resumed child is not a new launch: Run with no ticket does not count
		t.Fatalf("total %d", h.total)
	}
	h.Import(json.RawMessage(`{"total":1000000}`))
	if h.total != testLimits().MaxTotal {
		t.Fatalf("total %d", h.total)
	}
}

// TestIdle: Idle reports when every child has returned, or gives up after its bound.
func TestIdle(t *testing.T) {
	release := make(chan struct{})
	g, _ := group(t, testLimits(), 0, func(context.Context, *Child) Outcome {
		<-release
		return Outcome{Status: StatusCompleted}
	})
	if !g.rt.Idle(time.Millisecond) {
		t.Fatal("not idle with no child")
	}
	done := make(chan struct{})
	go func() { _, _ = admitRun(t, g, 1, nil); close(done) }()
	if !waitUntil(func() bool { return !g.rt.Idle(time.Millisecond) }) {
		t.Fatal("idle while a child runs")
	}
	close(release)
	if !g.rt.Idle(5 * time.Second) {
		t.Fatal("not idle after the child returned")
	}
	<-done
}
