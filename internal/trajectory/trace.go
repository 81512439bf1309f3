package trajectory

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/codemode-go/codemode/api"
)

// maxLineBytes bounds one line when reading a trajectory file.
const maxLineBytes = 1 << 20

// Read parses a JSON Lines trajectory. Lines that are not events are reported in bad (with line
// numbers) and skipped: a trace of a damaged file still shows what it can.
func Read(r io.Reader) (events []api.TrajectoryEvent, bad []string, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLineBytes)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var ev api.TrajectoryEvent
		if err := json.Unmarshal([]byte(text), &ev); err != nil || ev.Kind == "" {
			bad = append(bad, fmt.Sprintf("line %d: not a trajectory event", line))
			continue
		}
		events = append(events, ev)
	}
	if err := sc.Err(); err != nil {
		return events, bad, fmt.Errorf("line %d: %w", line+1, err)
	}
	return events, bad, nil
}

// RenderOptions control Render.
type RenderOptions struct {
	// Full prints inputs and results whole instead of a one-line preview.
	Full bool
}

const previewBytes = 120

// Render prints events as a tree per run: each control or direct call with, under an exec, the
// nested calls it made and the child agents it started (each with its own run, indented under
// its agents.run call), and under a wait the nested calls whose results it delivered; approvals
// and progress updates appear under the call they concern.
func Render(w io.Writer, events []api.TrajectoryEvent, opts RenderOptions) {
	var runs []*runGroup
	byRun := map[api.RunContext]*runGroup{}
	for _, ev := range events {
		k := runKey(ev.Run)
		g := byRun[k]
		if g == nil {
			g = &runGroup{rc: k}
			byRun[k] = g
			runs = append(runs, g)
		}
		g.events = append(g.events, ev)
	}
	// A child agent's run is "<parent run id>/<agents.run call id>" in the parent's session: it
	// is shown under that call, not on its own.
	t := &tree{w: w, opts: opts, byRun: byRun, nested: map[*runGroup]bool{}}
	for _, g := range runs {
		for _, ev := range g.events {
			if ev.Kind == api.EventAgent {
				if c := byRun[childKey(g.rc, ev.CallID)]; c != nil && c != g {
					t.nested[c] = true
				}
			}
		}
	}
	first := true
	for _, g := range runs {
		if t.nested[g] {
			continue
		}
		if !first {
			fmt.Fprintln(w)
		}
		first = false
		t.renderRun("", g, 0)
	}
}

type runGroup struct {
	rc     api.RunContext
	events []api.TrajectoryEvent
}

// tree renders run groups, child agents' runs inside their parents'.
type tree struct {
	w      io.Writer
	opts   RenderOptions
	byRun  map[api.RunContext]*runGroup
	nested map[*runGroup]bool
}

func runKey(rc api.RunContext) api.RunContext {
	return api.RunContext{Principal: rc.Principal, AgentID: rc.AgentID, SessionKey: rc.SessionKey, SessionID: rc.SessionID, RunID: rc.RunID}
}

// childKey is the run of the child agent a run's agents.run call started.
func childKey(parent api.RunContext, callID string) api.RunContext {
	k := parent
	if k.RunID == "" {
		k.RunID = callID
	} else {
		k.RunID += "/" + callID
	}
	return k
}

// maxChildDepth bounds how deep child agents are drawn.
const maxChildDepth = 16

func (t *tree) line(pad, format string, args ...any) {
	io.WriteString(t.w, pad)
	fmt.Fprintf(t.w, format, args...)
	io.WriteString(t.w, "\n")
}

func (t *tree) renderRun(pad string, g *runGroup, depth int) {
	rc, events := g.rc, g.events
	var head []string
	for _, kv := range [][2]string{{"principal", rc.Principal}, {"agent", rc.AgentID}, {"session", rc.SessionKey}, {"sessionId", rc.SessionID}, {"run", rc.RunID}} {
		if kv[1] != "" {
			head = append(head, kv[0]+"="+oneLine(kv[1], previewBytes))
		}
	}
	if len(head) == 0 {
		head = append(head, "(no run context)")
	}
	what := "run "
	if depth > 0 {
		what = "child run "
	}
	t.line(pad, "%s%s", what, strings.Join(head, " "))

	nested := map[string][]api.TrajectoryEvent{} // by parent exec call
	byCall := map[string]api.TrajectoryEvent{}   // nested calls by id
	about := map[string][]api.TrajectoryEvent{}  // approvals and updates by the call they concern
	var top []api.TrajectoryEvent
	for _, ev := range events {
		switch ev.Kind {
		case api.EventNested, api.EventAgent:
			nested[ev.ParentCallID] = append(nested[ev.ParentCallID], ev)
			byCall[ev.CallID] = ev
		case api.EventApprovalRequest, api.EventApprovalDecision, api.EventUpdate, api.EventDropped:
			about[ev.CallID] = append(about[ev.CallID], ev)
		default:
			top = append(top, ev)
		}
	}
	sort.SliceStable(top, func(i, j int) bool { return top[i].Time.Before(top[j].Time) })
	shown := map[string]bool{}
	for _, ev := range top {
		title := ""
		if ev.Title != "" {
			title = " " + strconv.Quote(oneLine(ev.Title, 200))
		}
		t.line(pad, "%s %s%s  %s%s%s", oneLine(ev.Tool, 200), oneLine(ev.CallID, 200), title, oneLine(ev.Status, 40), duration(ev.DurationMs), errorSuffix(ev.Error))
		t.detail(pad+"    ", ev)
		for _, a := range about[ev.CallID] {
			t.line(pad, "    %s", aboutLine(a))
		}
		kids := nested[ev.CallID]
		sort.SliceStable(kids, func(i, j int) bool { return kids[i].Time.Before(kids[j].Time) })
		var delivered []api.TrajectoryEvent
		for _, id := range ev.Delivered {
			if n, ok := byCall[id]; ok && n.ParentCallID != ev.CallID {
				delivered = append(delivered, n)
			}
		}
		for i, k := range kids {
			last := i == len(kids)-1 && len(delivered) == 0
			t.nestedLine(pad, g, k, last, about[k.CallID], "", depth)
			shown[k.CallID] = true
		}
		for i, k := range delivered {
			t.nestedLine(pad, g, k, i == len(delivered)-1, nil, "delivered ", depth)
		}
	}
	// Nested calls whose parent is not in this file (a trajectory that starts mid-run).
	var orphans []api.TrajectoryEvent
	for _, evs := range nested {
		for _, ev := range evs {
			if !shown[ev.CallID] {
				orphans = append(orphans, ev)
			}
		}
	}
	if len(orphans) > 0 {
		sort.SliceStable(orphans, func(i, j int) bool { return orphans[i].Time.Before(orphans[j].Time) })
		t.line(pad, "(nested calls whose parent call is not in this trajectory)")
		for i, k := range orphans {
			t.nestedLine(pad, g, k, i == len(orphans)-1, about[k.CallID], "", depth)
		}
	}
}

func (t *tree) nestedLine(pad string, g *runGroup, ev api.TrajectoryEvent, last bool, extra []api.TrajectoryEvent, prefix string, depth int) {
	branch, indent := "├─ ", "│    "
	if last {
		branch, indent = "└─ ", "     "
	}
	t.line(pad, "  %s%s%s %s  %s%s%s", branch, prefix, oneLine(ev.Tool, 200), oneLine(ev.CallID, 200), oneLine(ev.Status, 40), duration(ev.DurationMs), errorSuffix(ev.Error))
	if prefix != "" {
		return // delivered calls are detailed under the exec that made them
	}
	t.detail(pad+"  "+indent, ev)
	for _, a := range extra {
		t.line(pad, "  %s%s", indent, aboutLine(a))
	}
	if ev.Kind != api.EventAgent || depth >= maxChildDepth {
		return
	}
	if c := t.byRun[childKey(g.rc, ev.CallID)]; c != nil && c != g && t.nested[c] {
		t.renderRun(pad+"  "+indent, c, depth+1)
	}
}

func (t *tree) detail(pad string, ev api.TrajectoryEvent) {
	if len(ev.OriginalInput) > 0 {
		t.line(pad, "asked: %s", show(ev.OriginalInput, t.opts))
	}
	if len(ev.Input) > 0 {
		t.line(pad, "input: %s", show(ev.Input, t.opts))
	}
	if len(ev.Result) > 0 {
		t.line(pad, "result: %s", show(ev.Result, t.opts))
	}
}

func aboutLine(ev api.TrajectoryEvent) string {
	switch ev.Kind {
	case api.EventUpdate:
		if ev.Update != nil {
			if ev.Update.Type == "text" {
				return "update: " + oneLine(ev.Update.Text, previewBytes)
			}
			return "update: [" + oneLine(ev.Update.Type, 40) + "]"
		}
		return "update"
	case api.EventDropped:
		var d struct{ Message string }
		_ = json.Unmarshal(ev.Result, &d)
		return "not recorded: " + oneLine(d.Message, 2*previewBytes)
	case api.EventApprovalRequest:
		s := "approval requested"
		if ev.Approval != nil && ev.Approval.Prompt != "" {
			s += ": " + oneLine(ev.Approval.Prompt, previewBytes)
		}
		return s
	}
	s := "approval " + oneLine(ev.Status, 40)
	if ev.Approval != nil {
		if ev.Approval.By != "" {
			s += " by " + oneLine(ev.Approval.By, previewBytes)
		}
		if ev.Approval.Reason != "" {
			s += ": " + oneLine(ev.Approval.Reason, previewBytes)
		}
	}
	return s + " at " + ev.Time.UTC().Format("15:04:05")
}

func show(raw json.RawMessage, opts RenderOptions) string {
	if opts.Full {
		// JSON may carry DEL, C1 controls and format characters unescaped: escape them, the
		// JSON stays the same value.
		return strings.Map(func(r rune) rune {
			if unsafeRune(r) {
				return -1
			}
			return r
		}, escapeUnsafe(string(raw)))
	}
	return oneLine(string(raw), previewBytes)
}

// oneLine makes text from a trajectory file — written by tools, servers and cells — fit for
// one terminal line: whitespace collapsed, control and format characters dropped (no escape
// sequences or bidi overrides reach the terminal), at most n bytes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		if unsafeRune(r) {
			if unicode.IsSpace(r) {
				return ' '
			}
			return -1
		}
		return r
	}, s)), " ")
	if len(s) > n {
		return clipString(s, n)
	}
	return s
}

func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError
}

// escapeUnsafe writes unsafe runes of a JSON text as \uXXXX escapes (they can only occur
// inside strings, where the escape means the same).
func escapeUnsafe(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unsafeRune(r) && r != '\n' && r != '\t' && r != '\r' && r != utf8.RuneError {
			fmt.Fprintf(&b, "\\u%04x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func duration(ms int64) string {
	if ms <= 0 {
		return ""
	}
	return fmt.Sprintf("  %dms", ms)
}

func errorSuffix(e string) string {
	if e == "" {
		return ""
	}
	return "  error: " + oneLine(e, 200)
}
