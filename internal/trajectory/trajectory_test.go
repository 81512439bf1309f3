package trajectory

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/codemode-go/codemode/api"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestValueRedactsAndBounds(t *testing.T) { // Y2, E2: bounded, secrets redacted
	long := strings.Repeat("x", MaxStringBytes+100)
	cases := []struct {
		name, in string
		want     []string // substrings of the output
		not      []string // substrings that must be gone
	}{
		{"secret keys", `{"apiKey":"abc","password":"hunter2","Authorization":"Bearer t0ken-value-123","max_tokens":5,"token":""}`,
			[]string{`"apiKey":"[redacted]"`, `"password":"[redacted]"`, `"Authorization":"[redacted]"`, `"max_tokens":5`, `"token":""`},
			[]string{"hunter2", "t0ken-value"}},
		{"secret shapes in text", `{"note":"use sk-ABCDEFGHIJKLMNOPQRSTUV and ghp_abcdefghijklmnopqrstuvwx","hdr":"bearer abcdefghijkl"}`,
			[]string{"use [redacted] and [redacted]", "bearer [redacted]"}, []string{"sk-ABC", "ghp_abc", "abcdefghijkl"}},
		{"urls", `["https://user:pa55@example.com/x","https://e.com/a?api_key=s3cr3t&x=1"]`,
			[]string{"https://[redacted]@example.com/x", "?api_key=[redacted]&x=1"}, []string{"pa55", "s3cr3t"}},
		{"long strings", `{"s":"` + long + `"}`, []string{"bytes clipped]"}, nil},
		{"numbers keep precision", `{"n":12345678901234567890}`, []string{"12345678901234567890"}, nil},
		{"invalid json", `{"a":`, []string{`"{\"a\":"`}, nil},
		{"data after the value", `{"a":1} {"token":"x"}`, []string{`"{\"a\":1} {\"token\":\"x\"}"`}, nil},
		{"credential shapes in any case", `["SK-ABCDEFGHIJKLMNOPQRSTUV","akiaABCDEFGHIJKLMNOP","BeArEr abcdefghijkl","GHP_abcdefghijklmnopqrstuvwx"]`,
			[]string{`["[redacted]","[redacted]","BeArEr [redacted]","[redacted]"]`}, []string{"ABCDEFGH", "abcdefghijkl"}},
		{"escaped secrets", `{"k":"sk\u002dABCDEFGHIJKLMNOPQRSTUV","api\u004bey":"v"}`, []string{`"k":"[redacted]"`, `"apiKey":"[redacted]"`}, []string{"ABCDEF", `"v"`}},
		{"secrets in keys", `{"https://u:hunter2@host/":1}`, []string{`{"https://[redacted]@host/":1}`}, []string{"hunter2"}},
		{"key order kept, whitespace dropped", "{ \"z\": 1,\n \"a\": [ 2, {\"m\": null, \"b\": true} ] }", []string{`{"z":1,"a":[2,{"m":null,"b":true}]}`}, nil},
		{"key order kept while redacting", `{"z":1,"password":"p","a":{"x":[1,2],"token":{"nested":"y"}}}`, []string{`{"z":1,"password":"[redacted]","a":{"x":[1,2],"token":"[redacted]"}}`}, []string{`"nested"`}},
		{"no HTML escaping", `{"code":"return a => a < b && c > d"}`, []string{`"return a => a < b && c > d"`}, nil},
		{"invalid UTF-8", "[\"a\xffb\"]", []string{"[\"a\uFFFDb\"]"}, nil},
		{"unicode escapes kept as sent", `["\u00e9t\u00e9"]`, []string{`["\u00e9t\u00e9"]`}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := string(Value(json.RawMessage(c.in)))
			if !json.Valid([]byte(out)) {
				t.Fatalf("not JSON: %s", out)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("%s lacks %q", out, w)
				}
			}
			for _, n := range c.not {
				if strings.Contains(out, n) {
					t.Errorf("%s still has %q", out, n)
				}
			}
		})
	}
	var many []string
	for i := 0; i < 100; i++ {
		many = append(many, fmt.Sprintf("%q", strings.Repeat("y", 1000)))
	}
	big := Value(json.RawMessage("[" + strings.Join(many, ",") + "]"))
	if len(big) > MaxValueBytes || !strings.Contains(string(big), `"truncated":true`) {
		t.Fatalf("a 100 KB value was not bounded: %d bytes", len(big))
	}
	deep := strings.Repeat("[", 200) + strings.Repeat("]", 200)
	if out := Value(json.RawMessage(deep)); !strings.Contains(string(out), "nested too deeply") {
		t.Fatalf("deep value: %s", out)
	}
}

// FuzzValue: whatever the input, the output is valid JSON within bounds, and the fast path
// (values left as they are) agrees with the full rewrite.
func FuzzValue(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":"c"}]}`, `{"token":"x"}`, `"sk-ABCDEFGHIJKLMNOPQRSTUV"`, `[1e400]`, `{"a":"\u0000"}`,
		`{"a":1,"a":2}`, strings.Repeat("[", 40) + strings.Repeat("]", 40), "\"\xff\"", `{"url":"https://h/?key=v&x=1"}`, `  null `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out := Value(raw)
		if len(raw) == 0 {
			return
		}
		if !json.Valid(out) || !utf8.Valid(out) {
			t.Fatalf("Value(%q) = %q: not valid JSON", raw, out)
		}
		if len(out) > MaxValueBytes+MaxStringBytes+200 {
			t.Fatalf("Value(%q) is %d bytes", raw, len(out))
		}
		fast, ok := plain(raw)
		if !ok {
			return
		}
		slow, err := rewrite(raw)
		if err != nil {
			t.Fatalf("plain accepted %q, rewrite failed: %v", raw, err)
		}
		decode := func(b []byte) (v any, err error) {
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.UseNumber()
			err = dec.Decode(&v)
			return v, err
		}
		a, errA := decode(fast)
		b, errB := decode(slow)
		if errA != nil || errB != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("plain %q and rewrite %q differ for %q", fast, slow, raw)
		}
	})
}

// TestRedactClip: long strings are redacted and clipped without scanning their whole length,
// and a credential across the clip point is still redacted.
func TestRedactClip(t *testing.T) {
	key := "sk-" + strings.Repeat("A", 40)
	cases := []struct {
		name, in string
		n        int
		want     string
		not      string
	}{
		{"short", "a " + key, 100, "a [redacted]", "AAAA"},
		{"long, clean", strings.Repeat("x", 5000), 10, "xxxxxxxxxx…[4990 bytes clipped]", ""},
		{"credential across the cut", strings.Repeat("x", 95) + " " + key + strings.Repeat("y", 5000), 100, strings.Repeat("x", 95) + " [red…", "AAAA"},
		{"rune boundary", strings.Repeat("é", 3000), 5, "éé…[", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := redactClip(c.in, c.n)
			if !strings.HasPrefix(got, c.want) || (c.not != "" && strings.Contains(got, c.not)) || !utf8.ValidString(got) {
				t.Fatalf("%q", got)
			}
			if len(c.in) > c.n && !strings.HasSuffix(got, " bytes clipped]") {
				t.Fatalf("no clip note: %q", got)
			}
		})
	}
}

func TestSanitizeEvent(t *testing.T) {
	ev := Sanitize(api.TrajectoryEvent{Kind: api.EventNested, Error: "GET https://u:p@h/ failed",
		Approval: &api.ApprovalInfo{Reason: "token sk-ABCDEFGHIJKLMNOPQRSTUV leaked"},
		Update:   &api.ContentBlock{Type: "image", Data: strings.Repeat("A", 5000), MimeType: "image/png"}})
	if strings.Contains(ev.Error, "u:p@") || strings.Contains(ev.Approval.Reason, "sk-ABC") || ev.Update.Data != "[5000 bytes of image/png]" {
		t.Fatalf("%+v %+v %+v", ev.Error, ev.Approval, ev.Update)
	}
}

// TestEncodeMatchesJSON: the writer's encoding of an event (raw values spliced in) decodes to
// exactly what encoding/json makes of the sanitized event, for an event with every field set —
// a field added to api.TrajectoryEvent or a renamed tag shows here.
func TestEncodeMatchesJSON(t *testing.T) {
	ev := sampleTrajectory()[5]
	fill(reflect.ValueOf(&ev).Elem())
	ev.Input, ev.OriginalInput, ev.Result = json.RawMessage(`{"b":1,"a":"x <y>"}`), json.RawMessage(`[1,2]`), json.RawMessage(`"r"`)
	ev.Update.Resource = json.RawMessage(`{"uri":"u"}`)
	var buf bytes.Buffer
	if err := encode(&buf, Sanitize(ev)); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(Sanitize(ev))
	var got, exp map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil || !strings.HasSuffix(buf.String(), "}\n") || strings.Count(buf.String(), "\n") != 1 {
		t.Fatalf("%v: %q", err, buf.String())
	}
	json.Unmarshal(want, &exp)
	if !reflect.DeepEqual(got, exp) {
		t.Fatalf("writer:\n%s\nencoding/json:\n%s", buf.String(), want)
	}
	if !strings.Contains(buf.String(), `"a":"x <y>"`) {
		t.Fatalf("HTML escaped: %s", buf.String())
	}
}

// fill sets every settable field of v to a non-zero value.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("s-" + v.Type().Name())
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(7)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(v.Elem())
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.String {
			v.Set(reflect.ValueOf([]string{"d1", "d2"}))
		}
	}
}

func TestWriterConcurrent(t *testing.T) { // hammer: every line is one whole event
	var buf bytes.Buffer
	w := NewWriter(&buf)
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				w.Record(api.TrajectoryEvent{Kind: api.EventNested, CallID: fmt.Sprintf("c%d/%d", g, i), Tool: "native:core:read",
					Input: json.RawMessage(`{"path":"x"}`), Status: "ok"})
			}
		}(g)
	}
	wg.Wait()
	evs, bad, err := Read(&buf)
	if err != nil || len(bad) > 0 || len(evs) != 3200 || w.Count() != 3200 {
		t.Fatalf("%d events, bad %v, err %v", len(evs), bad, err)
	}
}

func TestCreateAppendsWithPrivateMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	for i := 0; i < 2; i++ {
		w, err := Create(path)
		if err != nil {
			t.Fatal(err)
		}
		w.Record(api.TrajectoryEvent{Kind: api.EventControl, Tool: "exec", CallID: fmt.Sprint(i)})
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	st, _ := os.Stat(path)
	f, _ := os.Open(path)
	defer f.Close()
	evs, _, _ := Read(f)
	if len(evs) != 2 || st.Mode().Perm() != 0o600 {
		t.Fatalf("%d events, mode %v", len(evs), st.Mode())
	}
}

func TestReadSkipsDamage(t *testing.T) {
	in := `{"kind":"control","tool":"exec","callId":"a","status":"completed"}
not json
{"no":"kind"}

{"kind":"control","tool":"wait","callId":"b","status":"completed"}`
	evs, bad, err := Read(strings.NewReader(in))
	if err != nil || len(evs) != 2 || len(bad) != 2 || bad[0] != "line 2: not a trajectory event" {
		t.Fatalf("%v %v %v", evs, bad, err)
	}
	if _, _, err := Read(strings.NewReader(strings.Repeat("x", maxLineBytes+10))); err == nil {
		t.Fatal("an oversized line was accepted")
	}
}

// sampleTrajectory is a run with an exec whose nested calls outlive it, a wait that delivers
// them, an approval, an update and a direct call.
func sampleTrajectory() []api.TrajectoryEvent {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	rc := api.RunContext{AgentID: "cli", SessionKey: "s1", RunID: "r1"}
	return []api.TrajectoryEvent{
		{Kind: api.EventNested, Time: at(1), Run: rc, CallID: "call_1/1", ParentCallID: "call_1", Tool: "native:core:read", Input: json.RawMessage(`{"path":"README.md"}`), Status: "ok", Result: json.RawMessage(`{"content":[{"type":"text","text":"hello"}]}`), DurationMs: 2},
		{Kind: api.EventApprovalRequest, Time: at(3), Run: rc, CallID: "call_1/2", Tool: "native:core:write", Approval: &api.ApprovalInfo{Prompt: "Write notes.md?"}},
		{Kind: api.EventUpdate, Time: at(4), Run: rc, CallID: "call_1/3", Tool: "mcp:everything:longRunningOperation", Update: &api.ContentBlock{Type: "text", Text: "50%"}},
		{Kind: api.EventControl, Time: at(0), Run: rc, CallID: "call_1", Tool: "exec", Input: json.RawMessage(`{"code":"…"}`), Status: "waiting", DurationMs: 10, CodeModeRunID: "run_X", Delivered: []string{"call_1/1"}},
		{Kind: api.EventApprovalDecision, Time: at(20), Run: rc, CallID: "call_1/2", Tool: "native:core:write", Status: "approved", Approval: &api.ApprovalInfo{By: "terminal"}},
		{Kind: api.EventNested, Time: at(3), Run: rc, CallID: "call_1/2", ParentCallID: "call_1", Tool: "native:core:write", Input: json.RawMessage(`{"path":"notes.md","content":"x"}`), OriginalInput: json.RawMessage(`{"path":"../notes.md","content":"x"}`), Status: "ok", DurationMs: 25},
		{Kind: api.EventNested, Time: at(4), Run: rc, CallID: "call_1/3", ParentCallID: "call_1", Tool: "mcp:everything:longRunningOperation", Status: "error", Error: "mcp:everything:longRunningOperation: cancelled", DurationMs: 40},
		{Kind: api.EventControl, Time: at(30), Run: rc, CallID: "call_2", Tool: "wait", Input: json.RawMessage(`{"runId":"run_X"}`), Status: "completed", DurationMs: 15, Delivered: []string{"call_1/2", "call_1/3"}},
		{Kind: api.EventDirect, Time: at(50), Run: rc, CallID: "call_3", Tool: "image", Input: json.RawMessage(`{}`), Status: "ok", DurationMs: 1},
		{Kind: api.EventControl, Time: at(60), Run: api.RunContext{AgentID: "cli", SessionKey: "s2"}, CallID: "call_9", Tool: "exec", Status: "failed", Error: "SyntaxError: unexpected token (line 1:9)"},
	}
}

func TestRenderGolden(t *testing.T) { // E2, §20 step 16: nested calls under their parent
	var buf bytes.Buffer
	Render(&buf, sampleTrajectory(), RenderOptions{})
	golden(t, "trace.golden", buf.String())
	out := buf.String()
	exec := strings.Index(out, "exec call_1")
	read := strings.Index(out, "native:core:read call_1/1")
	wait := strings.Index(out, "wait call_2")
	if !(exec >= 0 && exec < read && read < wait) || !strings.Contains(out, "delivered native:core:write call_1/2") {
		t.Fatalf("tree shape:\n%s", out)
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if string(want) != got {
		t.Fatalf("%s differs (run with -update to accept):\n%s", name, got)
	}
}

// benchLimits keep every event of a benchmark: they measure the recording path, not the cap.
var benchLimits = Limits{MaxEventsPerCall: 1 << 30, MaxBytes: 1 << 40}

func BenchmarkRecordNested(b *testing.B) { // target ≤ 20 µs per nested call
	w := NewLimitedWriter(io.Discard, benchLimits)
	ev := sampleTrajectory()[0]
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		w.Record(ev)
	}
}

// BenchmarkRecordNestedLarge: a nested call with a 4 KB result (a file read), nothing to redact.
func BenchmarkRecordNestedLarge(b *testing.B) {
	w := NewLimitedWriter(io.Discard, benchLimits)
	ev := sampleTrajectory()[0]
	text := strings.Repeat("line of the file with words, numbers 12345 and punctuation.\n", 64)
	ev.Result, _ = json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": text[:2000]}},
		"details": map[string]any{"path": "README.md", "content": text[:2000], "lines": 64}})
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		w.Record(ev)
	}
}

// BenchmarkRecordNestedRedacted: an input carrying a credential takes the full rewrite.
func BenchmarkRecordNestedRedacted(b *testing.B) {
	w := NewLimitedWriter(io.Discard, benchLimits)
	ev := sampleTrajectory()[0]
	ev.Input = json.RawMessage(`{"url":"https://api.example.com/v1/items?api_key=s3cr3t&page=2","headers":{"Authorization":"Bearer abcdefghijkl"}}`)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		w.Record(ev)
	}
}

func BenchmarkRecordNestedFile(b *testing.B) {
	w, err := CreateLimited(filepath.Join(b.TempDir(), "t.jsonl"), benchLimits)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	ev := sampleTrajectory()[0]
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		w.Record(ev)
	}
}

// BenchmarkRecordNestedDropped: a nested call past MaxEventsPerCall costs a count, not a write.
func BenchmarkRecordNestedDropped(b *testing.B) {
	w := NewLimitedWriter(io.Discard, Limits{MaxEventsPerCall: 100})
	ev := sampleTrajectory()[0]
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		w.Record(ev)
	}
}

// TestRenderHostile: a trajectory holds text from tools, servers and cells; `codemode trace`
// must not let escape sequences, C1 controls or bidi overrides reach the terminal, in previews
// or with --full.
func TestRenderHostile(t *testing.T) {
	evil := "\x1b[2J\u009b31m\u202eexe.txt\x7f\nnext"
	evilJSON, _ := json.Marshal(map[string]string{"k": evil})
	rc := api.RunContext{SessionKey: evil}
	evs := []api.TrajectoryEvent{
		{Kind: api.EventControl, Run: rc, CallID: evil, Tool: evil, Status: evil, Error: evil, Input: evilJSON, Result: json.RawMessage("{\"k\":\"\u009b\u202e\"}")},
		{Kind: api.EventNested, Run: rc, CallID: evil + "/1", ParentCallID: evil, Tool: evil, Status: "ok", Input: evilJSON},
		{Kind: api.EventUpdate, Run: rc, CallID: evil + "/1", Tool: evil, Update: &api.ContentBlock{Type: evil, Text: evil}},
		{Kind: api.EventApprovalDecision, Run: rc, CallID: evil + "/1", Tool: evil, Status: evil, Approval: &api.ApprovalInfo{By: evil, Reason: evil}},
	}
	for _, full := range []bool{false, true} {
		var buf bytes.Buffer
		Render(&buf, evs, RenderOptions{Full: full})
		out := buf.String()
		for _, bad := range []string{"\x1b", "\u009b", "\u202e", "\x7f", "\nnext"} {
			if strings.Contains(out, bad) {
				t.Errorf("full=%v: output has %q:\n%q", full, bad, out)
			}
		}
		if full && !strings.Contains(out, `\u009b\u202e`) {
			t.Errorf("--full does not show the escaped characters:\n%s", out)
		}
	}
}

// swarmTrajectory is a cell that started two child agents (issue 25): one with its own exec and
// nested call and a grandchild, one that failed; phase and log notes and child steps are updates.
func swarmTrajectory() []api.TrajectoryEvent {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	rc := api.RunContext{AgentID: "cli", SessionKey: "s1", RunID: "r1"}
	child := rc
	child.RunID = "r1/call_1/1"
	grand := rc
	grand.RunID = "r1/call_1/1/c1/1"
	failed := rc
	failed.RunID = "r1/call_1/2"
	return []api.TrajectoryEvent{
		{Kind: api.EventControl, Time: at(0), Run: rc, CallID: "call_1", Tool: "exec", Input: json.RawMessage(`{"code":"…"}`), Status: "completed", DurationMs: 900},
		{Kind: api.EventUpdate, Time: at(1), Run: rc, CallID: "call_1", ParentCallID: "call_1", Tool: "phase", Update: &api.ContentBlock{Type: "text", Text: "phase: review"}},
		{Kind: api.EventUpdate, Time: at(2), Run: rc, CallID: "call_1/1", ParentCallID: "call_1", Tool: "agents.run", Update: &api.ContentBlock{Type: "text", Text: "agent auth: started"}},
		{Kind: api.EventControl, Time: at(10), Run: child, CallID: "c1", ParentCallID: "call_1/1", Tool: "exec", Status: "completed", DurationMs: 300},
		{Kind: api.EventNested, Time: at(11), Run: child, CallID: "c1/2", ParentCallID: "c1", Tool: "native:core:read", Input: json.RawMessage(`{"path":"auth.go"}`), Status: "ok", DurationMs: 3},
		{Kind: api.EventAgent, Time: at(12), Run: child, CallID: "c1/1", ParentCallID: "c1", Tool: "agents.run", Input: json.RawMessage(`{"prompt":"check tokens"}`), Status: "completed", DurationMs: 200},
		{Kind: api.EventControl, Time: at(20), Run: grand, CallID: "g1", ParentCallID: "c1/1", Tool: "exec", Status: "completed", DurationMs: 20},
		{Kind: api.EventAgent, Time: at(2), Run: rc, CallID: "call_1/1", ParentCallID: "call_1", Tool: "agents.run auth", Input: json.RawMessage(`{"prompt":"Review auth","label":"auth"}`), Status: "completed", Result: json.RawMessage(`{"runId":"r1/call_1/1","status":"completed","text":"fine"}`), DurationMs: 700},
		{Kind: api.EventAgent, Time: at(3), Run: rc, CallID: "call_1/2", ParentCallID: "call_1", Tool: "agents.run", Input: json.RawMessage(`{"prompt":"Review storage"}`), Status: "failed", Error: "child agent: the model is down", DurationMs: 5},
		{Kind: api.EventUpdate, Time: at(4), Run: rc, CallID: "call_1/2", ParentCallID: "call_1", Tool: "agents.run", Update: &api.ContentBlock{Type: "text", Text: "agent call_1/2: failed"}},
		{Kind: api.EventControl, Time: at(30), Run: failed, CallID: "f1", ParentCallID: "call_1/2", Tool: "exec", Status: "failed", Error: "cancelled"},
	}
}

func TestRenderChildAgents(t *testing.T) { // issue 25 item 5: codemode trace shows the tree of children
	var buf bytes.Buffer
	Render(&buf, swarmTrajectory(), RenderOptions{})
	golden(t, "trace-swarm.golden", buf.String())
	out := buf.String()
	if strings.Count(out, "\nrun ") != 0 || !strings.HasPrefix(out, "run ") || strings.Count(out, "child run ") != 3 {
		t.Fatalf("child runs are not nested under their calls:\n%s", out)
	}
	at := func(s string) int { return strings.Index(out, s) }
	if !(at("agents.run auth call_1/1") < at("child run agent=cli session=s1 run=r1/call_1/1\n") &&
		at("child run agent=cli session=s1 run=r1/call_1/1\n") < at("native:core:read c1/2") &&
		at("native:core:read c1/2") < at("run=r1/call_1/1/c1/1") && at("run=r1/call_1/1/c1/1") < at("agents.run call_1/2")) {
		t.Fatalf("tree order:\n%s", out)
	}
}
