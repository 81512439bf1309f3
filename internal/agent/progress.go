package agent

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/provider"
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
	p.printf("  %s %s …\n", call.Name, call.ID)
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
			status += ": " + clip(res.Exec.Error, 200)
		}
	case res.Err != nil:
		status = "error: " + clip(res.Err.Error(), 200)
	case res.Tool != nil && res.Tool.IsError:
		status = "error"
	}
	p.printf("  %s %s → %s (%s)\n", call.Name, call.ID, status, ms(d))
}

// Record shows nested calls, updates and approvals as the runtime records them.
func (p *Printer) Record(ev api.TrajectoryEvent) {
	switch ev.Kind {
	case api.EventNested:
		mark := "✓"
		if ev.Status != "ok" {
			mark = "✗"
		}
		line := fmt.Sprintf("    %s %s (%dms)", mark, ev.Tool, ev.DurationMs)
		if ev.Error != "" {
			line += ": " + clip(ev.Error, 200)
		}
		p.printf("%s\n", line)
	case api.EventUpdate:
		if ev.Update != nil && ev.Update.Type == "text" {
			p.printf("    … %s: %s\n", ev.Tool, clip(ev.Update.Text, 200))
		}
	case api.EventApprovalRequest:
		p.printf("    ? %s waits for approval\n", ev.Tool)
	case api.EventApprovalDecision:
		who := ""
		if ev.Approval != nil && ev.Approval.By != "" {
			who = " by " + ev.Approval.By
		}
		p.printf("    %s %s%s\n", ev.Status, ev.Tool, who)
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

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
