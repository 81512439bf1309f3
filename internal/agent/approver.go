package agent

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/textcut"
)

// Approval modes of `codemode agent --approve`.
const (
	ApproveAsk      = "ask"      // ask the person on the terminal
	ApproveNone     = "none"     // reject every call that needs approval
	ApproveAll      = "all"      // approve every call that needs approval
	ApproveReadOnly = "readonly" // approve tools declared read-only, reject the rest
)

// PolicyApprover answers approval requests without a person, for runs that are not interactive.
func PolicyApprover(mode string) (api.Approver, error) {
	switch mode {
	case ApproveNone, ApproveAll, ApproveReadOnly:
	default:
		return nil, fmt.Errorf("unknown approval mode %q (ask, none, all or readonly)", mode)
	}
	by := "--approve " + mode
	return api.ApproverFunc(func(ctx context.Context, req api.ApprovalRequest) (api.Decision, error) {
		switch {
		case mode == ApproveAll:
			return api.Decision{Approve: true, By: by}, nil
		case mode == ApproveReadOnly && req.ReadOnly:
			return api.Decision{Approve: true, By: by, Reason: "the tool is read-only"}, nil
		case mode == ApproveReadOnly:
			return api.Decision{By: by, Reason: "only read-only tools are approved in this run"}, nil
		}
		return api.Decision{By: by, Reason: "approvals are refused in this run (--approve none)"}, nil
	}), nil
}

// Terminal asks a person on a terminal: it shows the tool, the input and the prompt on out and
// reads y(es), n(o) or a(lways, for this tool in this run) from in. Questions are asked one at a
// time; a closed input rejects.
type Terminal struct {
	// Echo writes each answer read after its question, for input that is not a terminal (a
	// pipe or a file does not echo what it supplies, and the next line would continue the
	// question's).
	Echo bool

	mu     sync.Mutex
	in     io.Reader
	lines  chan string // one reader goroutine feeds it; closed at end of input
	once   sync.Once
	out    io.Writer
	always map[string]bool
}

// NewTerminal asks on out and reads answers from in.
func NewTerminal(in io.Reader, out io.Writer) *Terminal {
	return &Terminal{in: in, out: out, always: map[string]bool{}, lines: make(chan string)}
}

// read starts the one goroutine that reads answers: an answer not awaited any more (a request
// that expired) is left for the next question rather than read twice.
func (t *Terminal) read() {
	t.once.Do(func() {
		go func() {
			defer close(t.lines)
			sc := bufio.NewScanner(t.in)
			for sc.Scan() {
				t.lines <- sc.Text()
			}
		}()
	})
}

// Ask implements api.Approver.
func (t *Terminal) Ask(ctx context.Context, req api.ApprovalRequest) (api.Decision, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.always[req.Tool] {
		return api.Decision{Approve: true, By: "terminal (always for this run)"}, nil
	}
	if ctx.Err() != nil {
		return api.Decision{}, ctx.Err()
	}
	input := textcut.Line(string(req.Input), 300)
	tool := textcut.Line(req.Tool, 200)
	fmt.Fprintf(t.out, "\n? approval needed: %s %s\n  %s\n  approve? [y]es / [n]o / [a]lways for %s in this run: ", tool, input, textcut.Line(req.Prompt, 1000), tool)
	t.read()
	var line string
	var open bool
	select {
	case line, open = <-t.lines:
	case <-ctx.Done():
		fmt.Fprintln(t.out, "(no answer in time)")
		return api.Decision{}, ctx.Err()
	}
	if !open {
		fmt.Fprintln(t.out, "(no answer: input closed)")
		return api.Decision{By: "terminal", Reason: "no answer (input closed)"}, nil
	}
	if t.Echo {
		fmt.Fprintln(t.out, textcut.Line(line, 80))
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return api.Decision{Approve: true, By: "terminal"}, nil
	case "a", "always":
		t.always[req.Tool] = true
		return api.Decision{Approve: true, By: "terminal (always for this run)"}, nil
	case "n", "no":
		return api.Decision{By: "terminal", Reason: "the person said no"}, nil
	}
	return api.Decision{By: "terminal", Reason: fmt.Sprintf("not approved (answer %q)", strings.TrimSpace(line))}, nil
}
