package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/procgroup"
	"github.com/codemode-go/codemode/internal/trajectory"
)

// Client tools are tools the client of one run brings along (K1: catalogued last, as
// client:<owner>:<name>). For `codemode agent` they are programs: the tool's JSON input arrives on
// the program's stdin and its stdout is the result (JSON output also becomes the result's
// details); each line the program writes to stderr is a progress update (E1), shown as it
// arrives, the way git and curl report progress. Their metadata is untrusted like any client's
// (G1: no hints from their schemas).

// clientToolOwner is the owner of the CLI's client tools: client:cli:<name>.
const clientToolOwner = "cli"

const (
	clientToolTimeout   = 60 * time.Second
	clientToolMaxOutput = 1 << 20
	// clientToolMaxStderr is how much of stderr is kept for the error message of a failed call.
	clientToolMaxStderr = 8 << 10
	// clientToolMaxUpdates bounds the progress updates of one call, clientToolMaxUpdateBytes
	// each: a program that floods stderr cannot flood the trajectory or the terminal.
	clientToolMaxUpdates     = 256
	clientToolMaxUpdateBytes = 1 << 10
	// clientToolWaitDelay bounds how long a call waits for the output pipes to close once the
	// program has exited or been killed (a grandchild may hold them open).
	clientToolWaitDelay = 2 * time.Second
)

type clientToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	// Command is the program and its arguments (no shell).
	Command []string `json:"command"`
	// TimeoutMs bounds one call (default 60000).
	TimeoutMs int `json:"timeoutMs"`
}

var toolName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]{0,63}$`)

// clientPrograms tracks the programs client tools started, so a run that ends (Ctrl-C, a
// failure) can wait until the ones it cancelled are gone instead of leaving them behind, and
// until their calls are in the trajectory: the runtime records a nested call just after the
// tool returns, on the call's own goroutine, which a cancelled run does not wait for.
type clientPrograms struct {
	wg sync.WaitGroup

	mu sync.Mutex
	// unrecorded counts, by parent exec call and tool id, the client tool calls that started and
	// whose nested-call record has not reached the trajectory yet.
	unrecorded map[[2]string]int
}

func (p *clientPrograms) started(c *api.Call) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.unrecorded == nil {
		p.unrecorded = map[[2]string]int{}
	}
	p.unrecorded[[2]string{c.ParentCallID, c.ToolID}]++
}

// recorded sees a trajectory event: the record of a client tool call settles one started call
// of the same exec and tool.
func (p *clientPrograms) recorded(ev api.TrajectoryEvent) {
	if ev.Kind != api.EventNested {
		return
	}
	k := [2]string{ev.ParentCallID, ev.Tool}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.unrecorded[k] > 0 {
		if p.unrecorded[k]--; p.unrecorded[k] == 0 {
			delete(p.unrecorded, k)
		}
	}
}

func (p *clientPrograms) pendingRecords() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.unrecorded)
}

// wait waits for every started program to be reaped and, when recording, for every client tool
// call to be in the trajectory, at most d in all; it reports whether the programs were reaped.
func (p *clientPrograms) wait(d time.Duration, recording bool) bool {
	deadline := time.Now().Add(d)
	done := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
		return false
	}
	for recording && p.pendingRecords() > 0 && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	return true
}

// trajectory wraps the run's trajectory to see the records of client tool calls.
func (p *clientPrograms) trajectory(next api.Trajectory) api.Trajectory {
	return trajectory.Func(func(ev api.TrajectoryEvent) {
		next.Record(ev)
		p.recorded(ev)
	})
}

// loadClientTools reads a JSON5 file holding an array of client tool definitions. procs (may be
// nil) tracks the programs the tools start.
func loadClientTools(path string, procs *clientPrograms) ([]*api.Tool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var defs []clientToolDef
	if err := config.DecodeJSON5(data, &defs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	seen := map[string]bool{}
	tools := make([]*api.Tool, 0, len(defs))
	for i, d := range defs {
		switch {
		case !toolName.MatchString(d.Name):
			return nil, fmt.Errorf("%s: tool %d: name %q must be 1–64 letters, digits, _ or -", path, i, d.Name)
		case seen[d.Name]:
			return nil, fmt.Errorf("%s: tool %q is defined twice", path, d.Name)
		case len(d.Command) == 0 || d.Command[0] == "":
			return nil, fmt.Errorf("%s: tool %q has no command", path, d.Name)
		case len(d.InputSchema) > 0 && !isObject(d.InputSchema):
			// Sent as is to the model when code mode is off: providers reject anything else.
			return nil, fmt.Errorf("%s: tool %q: inputSchema must be a JSON Schema object", path, d.Name)
		case d.TimeoutMs < 0 || d.TimeoutMs > 600000:
			return nil, fmt.Errorf("%s: tool %q: timeoutMs must be 0–600000", path, d.Name)
		}
		seen[d.Name] = true
		tools = append(tools, commandTool(d, procs))
	}
	return tools, nil
}

func commandTool(d clientToolDef, procs *clientPrograms) *api.Tool {
	if procs == nil {
		procs = &clientPrograms{}
	}
	timeout := clientToolTimeout
	if d.TimeoutMs > 0 {
		timeout = time.Duration(d.TimeoutMs) * time.Millisecond
	}
	argv := append([]string(nil), d.Command...)
	return &api.Tool{
		Name: d.Name, Description: d.Description, InputSchema: d.InputSchema,
		Source: api.SourceClient, Owner: clientToolOwner, Untrusted: true,
		Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			cmd.Stdin = bytes.NewReader(c.Input)
			var stdout limitedBuffer
			stdout.max = clientToolMaxOutput
			stderr := &progressWriter{update: c.Update}
			stderr.keep.max = clientToolMaxStderr
			cmd.Stdout, cmd.Stderr = &stdout, stderr
			cmd.WaitDelay = clientToolWaitDelay
			procgroup.KillOnCancel(cmd) // what the program started dies with it
			if c.Update != nil {
				// A nested call with a trajectory listening (the runtime gives direct calls no
				// Update): the runtime records it after we return.
				procs.started(c)
			}
			procs.wg.Add(1)
			err := cmd.Start()
			if err == nil {
				err = cmd.Wait()
			}
			if ctx.Err() != nil && cmd.Cancel != nil && cmd.Process != nil {
				// Timed out or cancelled: nothing the program started outlives the call, even when
				// the program itself had already exited.
				_ = cmd.Cancel()
			}
			procs.wg.Done()
			stderr.flush()
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%s did not finish within %s", d.Name, timeout)
			}
			out := strings.TrimRight(stdout.String(), "\n")
			if err != nil {
				var exit *exec.ExitError
				if !errors.As(err, &exit) {
					return nil, fmt.Errorf("%s: %v", d.Name, err)
				}
				msg := strings.TrimSpace(stderr.keep.String())
				if msg == "" {
					msg = out
				}
				return &api.Result{IsError: true, Content: []api.ContentBlock{{Type: "text",
					Text: fmt.Sprintf("%s exited with status %d: %s", d.Name, exit.ExitCode(), msg)}}}, nil
			}
			res := &api.Result{Content: []api.ContentBlock{{Type: "text", Text: out}}}
			if b := bytes.TrimSpace([]byte(out)); len(b) > 0 && json.Valid(b) {
				res.Details = b
			}
			return res, nil
		},
	}
}

func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}

// limitedBuffer keeps the first max bytes written and discards the rest (a chatty program must
// not grow the gateway's memory).
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// progressWriter is a client tool program's stderr: it keeps the first bytes for an error message
// and turns each complete line into a progress update (bounded in count and length). os/exec
// writes to it from one goroutine.
type progressWriter struct {
	keep    limitedBuffer
	update  func(api.ContentBlock)
	line    []byte
	long    bool // the current line passed clientToolMaxUpdateBytes: the rest of it is dropped
	updates int
}

func (w *progressWriter) Write(p []byte) (int, error) {
	w.keep.Write(p)
	if w.update == nil {
		return len(p), nil
	}
	for rest := p; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		chunk := rest
		if i >= 0 {
			chunk = rest[:i]
		}
		if room := clientToolMaxUpdateBytes - len(w.line); room < len(chunk) {
			chunk, w.long = chunk[:max(room, 0)], true
		}
		w.line = append(w.line, chunk...)
		if i < 0 {
			break
		}
		w.emit()
		rest = rest[i+1:]
	}
	return len(p), nil
}

// flush reports a last line that did not end with a newline.
func (w *progressWriter) flush() {
	if len(w.line) > 0 {
		w.emit()
	}
}

func (w *progressWriter) emit() {
	line := strings.TrimSpace(strings.ToValidUTF8(string(trimRune(w.line)), "\uFFFD"))
	if w.long {
		line += "…"
	}
	w.line, w.long = w.line[:0], false
	if line == "" || w.updates >= clientToolMaxUpdates {
		return
	}
	w.updates++
	if w.updates == clientToolMaxUpdates {
		line += " (further progress of this call is not shown)"
	}
	w.update(api.ContentBlock{Type: "text", Text: line})
}

// trimRune drops a UTF-8 sequence cut by the length bound.
func trimRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}
