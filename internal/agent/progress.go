package agent

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/provider"
	"github.com/codemode-go/codemode/internal/textcut"
)

// Printer shows a run's progress to a person: each model turn, each exec, wait and direct call,
// and — through the runtime's trajectory — each nested call and progress update as it happens,
// with durations. It is both a Progress and an api.Trajectory; lines are whole and serialized.
type Printer struct {
	mu sync.Mutex
	w  io.Writer
}

var (
	_ Progress       = (*Printer)(nil)
	_ api.Trajectory = (*Printer)(nil)
)

// NewPrinter prints to w (usually stderr).
func NewPrinter(w io.Writer) *Printer { return &Printer{w: w} }

func (p *Printer) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format, args...)
}

// Turn reports a model call.
func (p *Printer) Turn(n int, resp *provider.Response, d time.Duration) {
	what := "answer"
	if k := len(resp.ToolCalls); k > 0 {
		what = fmt.Sprintf("%d tool call%s", k, plural(k))
	}
	p.printf("[turn %d] model → %s (%s)\n", n, what, ms(d))
}

// CallStart reports a control or direct call the model made.
func (p *Printer) CallStart(call provider.ToolCall) {
	p.printf("  %s %s …\n", textcut.Line(call.Name, 100), textcut.Line(call.ID, 100))
}

// CallEnd reports how it ended.
func (p *Printer) CallEnd(call provider.ToolCall, res codemode.CallResult, d time.Duration) {
	status := "ok"
	switch {
	case res.Exec != nil:
		status = res.Exec.Status
		if res.Exec.Status == api.StatusWaiting {
			status += " (" + res.Exec.Reason + ", " + res.Exec.RunID + ")"
		}
		if res.Exec.Status == api.StatusFailed {
			status += ": " + textcut.Line(res.Exec.Error, 200)
		}
	case res.Err != nil:
		status = "error: " + textcut.Line(res.Err.Error(), 200)
	case res.Tool != nil && res.Tool.IsError:
		status = "error"
	}
	p.printf("  %s %s → %s (%s)\n", textcut.Line(call.Name, 100), textcut.Line(call.ID, 100), status, ms(d))
}

// Record shows nested calls, updates and approvals as the runtime records them.
func (p *Printer) Record(ev api.TrajectoryEvent) {
	switch ev.Kind {
	case api.EventNested:
		mark := "✓"
		if ev.Status != "ok" {
			mark = "✗"
		}
		line := fmt.Sprintf("    %s %s (%dms)", mark, textcut.Line(ev.Tool, 200), ev.DurationMs)
		if ev.Error != "" {
			line += ": " + textcut.Line(ev.Error, 200)
		}
		p.printf("%s\n", line)
	case api.EventUpdate:
		switch {
		case ev.Update == nil:
		case ev.Update.Type == "text":
			p.printf("    … %s: %s\n", textcut.Line(ev.Tool, 200), textcut.Line(ev.Update.Text, 200))
		default:
			p.printf("    … %s: [%s]\n", textcut.Line(ev.Tool, 200), textcut.Line(ev.Update.Type, 20))
		}
	case api.EventAgent:
		mark := "✓"
		if ev.Status != "completed" {
			mark = "✗"
		}
		line := fmt.Sprintf("    %s %s %s (%dms)", mark, textcut.Line(ev.Tool, 200), textcut.Line(ev.Status, 40), ev.DurationMs)
		if ev.Error != "" {
			line += ": " + textcut.Line(ev.Error, 200)
		}
		p.printf("%s\n", line)
	case api.EventControl, api.EventDirect:
		// The top-level loop reports its own calls (CallEnd); these are a child agent's.
		if ev.ParentCallID != "" {
			p.printf("      %s %s (%dms) [child of %s]\n", textcut.Line(ev.Tool, 100), textcut.Line(ev.Status, 40), ev.DurationMs, textcut.Line(ev.ParentCallID, 100))
		}
	case api.EventApprovalRequest:
		p.printf("    ? %s waits for approval\n", textcut.Line(ev.Tool, 200))
	case api.EventApprovalDecision:
		who := ""
		if ev.Approval != nil && ev.Approval.By != "" {
			who = " by " + textcut.Line(ev.Approval.By, 100)
		}
		p.printf("    %s %s%s\n", ev.Status, textcut.Line(ev.Tool, 200), who)
	}
}

func ms(d time.Duration) string {
	if d < time.Millisecond {
		return fmt.Sprintf("%dµs", d.Microseconds())
	}
	if d < 10*time.Second {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return d.Round(100 * time.Millisecond).String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
