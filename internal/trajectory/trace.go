package trajectory

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
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
// nested calls it made, and under a wait the nested calls whose results it delivered; approvals
// and progress updates appear under the call they concern.
func Render(w io.Writer, events []api.TrajectoryEvent, opts RenderOptions) {
	type runGroup struct {
		rc     api.RunContext
		events []api.TrajectoryEvent
	}
	var runs []*runGroup
	byRun := map[api.RunContext]*runGroup{}
	for _, ev := range events {
		k := api.RunContext{AgentID: ev.Run.AgentID, SessionKey: ev.Run.SessionKey, SessionID: ev.Run.SessionID, RunID: ev.Run.RunID}
		g := byRun[k]
		if g == nil {
			g = &runGroup{rc: k}
			byRun[k] = g
			runs = append(runs, g)
		}
		g.events = append(g.events, ev)
	}
	for i, g := range runs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		renderRun(w, g.rc, g.events, opts)
	}
}

func renderRun(w io.Writer, rc api.RunContext, events []api.TrajectoryEvent, opts RenderOptions) {
	var head []string
	for _, kv := range [][2]string{{"agent", rc.AgentID}, {"session", rc.SessionKey}, {"sessionId", rc.SessionID}, {"run", rc.RunID}} {
		if kv[1] != "" {
			head = append(head, kv[0]+"="+oneLine(kv[1], previewBytes))
		}
	}
	if len(head) == 0 {
		head = append(head, "(no run context)")
	}
	fmt.Fprintln(w, "run "+strings.Join(head, " "))

	nested := map[string][]api.TrajectoryEvent{} // by parent exec call
	byCall := map[string]api.TrajectoryEvent{}   // nested calls by id
	about := map[string][]api.TrajectoryEvent{}  // approvals and updates by the call they concern
	var top []api.TrajectoryEvent
	for _, ev := range events {
		switch ev.Kind {
		case api.EventNested:
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
		fmt.Fprintf(w, "%s %s  %s%s%s\n", oneLine(ev.Tool, 200), oneLine(ev.CallID, 200), oneLine(ev.Status, 40), duration(ev.DurationMs), errorSuffix(ev.Error))
		detail(w, "    ", ev, opts)
		for _, a := range about[ev.CallID] {
			fmt.Fprintf(w, "    %s\n", aboutLine(a))
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
			nestedLine(w, k, last, about[k.CallID], opts, "")
			shown[k.CallID] = true
		}
		for i, k := range delivered {
			nestedLine(w, k, i == len(delivered)-1, nil, opts, "delivered ")
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
		fmt.Fprintln(w, "(nested calls whose parent call is not in this trajectory)")
		for i, k := range orphans {
			nestedLine(w, k, i == len(orphans)-1, about[k.CallID], opts, "")
		}
	}
}

func nestedLine(w io.Writer, ev api.TrajectoryEvent, last bool, extra []api.TrajectoryEvent, opts RenderOptions, prefix string) {
	branch, indent := "├─ ", "│    "
	if last {
		branch, indent = "└─ ", "     "
	}
	fmt.Fprintf(w, "  %s%s%s %s  %s%s%s\n", branch, prefix, oneLine(ev.Tool, 200), oneLine(ev.CallID, 200), oneLine(ev.Status, 40), duration(ev.DurationMs), errorSuffix(ev.Error))
	if prefix != "" {
		return // delivered calls are detailed under the exec that made them
	}
	detail(w, "  "+indent, ev, opts)
	for _, a := range extra {
		fmt.Fprintf(w, "  %s%s\n", indent, aboutLine(a))
	}
}

func detail(w io.Writer, indent string, ev api.TrajectoryEvent, opts RenderOptions) {
	if len(ev.OriginalInput) > 0 {
		fmt.Fprintf(w, "%sasked: %s\n", indent, show(ev.OriginalInput, opts))
	}
	if len(ev.Input) > 0 {
		fmt.Fprintf(w, "%sinput: %s\n", indent, show(ev.Input, opts))
	}
	if len(ev.Result) > 0 {
		fmt.Fprintf(w, "%sresult: %s\n", indent, show(ev.Result, opts))
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
