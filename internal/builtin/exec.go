package builtin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/nativetool"
	"github.com/codemode-go/codemode/internal/procgroup"
)

const (
	execDefaultTimeout = 30 * time.Second
	execMaxTimeoutMs   = 600_000
	execMaxOutput      = 64 << 10 // bytes kept of stdout and of stderr each
	execMaxCommand     = 1 << 20
	// execWaitDelay bounds how long exec waits for the output pipes to close after the shell
	// has exited (a background child may hold them) or after it was killed.
	execWaitDelay = 2 * time.Second
)

const execInput = `{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "Shell command, run with sh -c."},
    "cwd": {"type": "string", "description": "Working directory relative to the workspace root (default: the root)."},
    "timeoutMs": {"type": "integer", "minimum": 1, "maximum": 600000, "description": "Time limit in milliseconds (default 30000)."}
  },
  "required": ["command"],
  "additionalProperties": false
}`

const execOutput = `{
  "type": "object",
  "properties": {
    "exitCode": {"type": "integer", "description": "The shell's exit status; -1 when it was killed by a signal."},
    "stdout": {"type": "string"},
    "stderr": {"type": "string"},
    "truncated": {"type": "boolean", "description": "True when stdout or stderr passed 64 KiB and was cut."},
    "timedOut": {"type": "boolean", "description": "True when the command ran out of time and was killed."},
    "durationMs": {"type": "integer", "minimum": 0}
  },
  "required": ["exitCode", "stdout", "stderr", "truncated", "timedOut", "durationMs"],
  "additionalProperties": false
}`

type execArgs struct {
	Command   string `json:"command"`
	Cwd       string `json:"cwd"`
	TimeoutMs *int   `json:"timeoutMs"`
}

type execDetails struct {
	ExitCode   int    `json:"exitCode"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	Truncated  bool   `json:"truncated"`
	TimedOut   bool   `json:"timedOut"`
	DurationMs int64  `json:"durationMs"`
}

func execTool(ws *workspace) *api.Tool {
	return typedTool("exec", "Run shell command",
		"Run a shell command (sh -c) in the workspace and return its exit code and output (64 KiB of stdout and of stderr at most). The command is killed with its whole process group when it exceeds timeoutMs (default 30 s, at most 10 min).",
		execInput, execOutput, false,
		func(ctx context.Context, in *execArgs) (*api.Result, error) {
			if strings.TrimSpace(in.Command) == "" {
				return nil, errors.New("exec: command is required")
			}
			if len(in.Command) > execMaxCommand {
				return nil, fmt.Errorf("exec: command is %d bytes (limit %d)", len(in.Command), execMaxCommand)
			}
			if strings.IndexByte(in.Command, 0) >= 0 {
				return nil, errors.New("exec: command contains a NUL byte")
			}
			ms, err := nativetool.IntArg("exec", "timeoutMs", in.TimeoutMs, int(execDefaultTimeout/time.Millisecond), 1, execMaxTimeoutMs)
			if err != nil {
				return nil, err
			}
			d, err := ws.exec(ctx, in.Command, in.Cwd, time.Duration(ms)*time.Millisecond)
			if err != nil {
				return nil, err
			}
			return nativetool.Result(execText(d), d)
		})
}

func (w *workspace) exec(ctx context.Context, command, cwd string, timeout time.Duration) (*execDetails, error) {
	p, err := w.resolve("exec", cwd)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(w.Real, p.Rel)
	if fi, err := os.Stat(dir); err != nil {
		return nil, pathErr("exec", p.Show, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("exec: cwd %s is not a directory", p.Show)
	}
	shell := "/bin/sh"
	if _, err := os.Stat(shell); err != nil {
		shell = "sh"
	}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, shell, "-c", command)
	cmd.Dir = dir
	var stdout, stderr cappedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = execWaitDelay
	procgroup.KillOnCancel(cmd)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("exec: cannot start the shell: %v", err)
	}
	err = cmd.Wait()
	elapsed := time.Since(start)
	if runCtx.Err() != nil && cmd.Cancel != nil {
		// Timed out or cancelled: make sure nothing of the group outlives the call, even when
		// the shell itself had already exited.
		_ = cmd.Cancel()
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("exec: cancelled: %w", ctx.Err())
	}
	d := &execDetails{
		ExitCode:   -1,
		Stdout:     stdout.String(),
		Stderr:     stderr.String(),
		Truncated:  stdout.truncated || stderr.truncated,
		TimedOut:   runCtx.Err() != nil,
		DurationMs: elapsed.Milliseconds(),
	}
	if cmd.ProcessState != nil {
		d.ExitCode = cmd.ProcessState.ExitCode()
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) && !errors.Is(err, exec.ErrWaitDelay) && !d.TimedOut {
		return nil, fmt.Errorf("exec: %v", err)
	}
	return d, nil
}

// cappedBuffer keeps the first execMaxOutput bytes written to it and discards the rest, so a
// chatty command never blocks on a full pipe.
type cappedBuffer struct {
	b         []byte
	truncated bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	room := execMaxOutput - len(c.b)
	if len(p) > room {
		c.truncated = true
		p = p[:max(room, 0)]
	}
	c.b = append(c.b, p...)
	return n, nil
}

func (c *cappedBuffer) String() string {
	b := c.b
	if c.truncated {
		b = trimPartialRune(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

func execText(d *execDetails) string {
	var b strings.Builder
	if d.Stdout != "" {
		b.WriteString(d.Stdout)
		if !strings.HasSuffix(d.Stdout, "\n") {
			b.WriteByte('\n')
		}
	}
	if d.Stderr != "" {
		b.WriteString("[stderr]\n")
		b.WriteString(d.Stderr)
		if !strings.HasSuffix(d.Stderr, "\n") {
			b.WriteByte('\n')
		}
	}
	switch {
	case d.TimedOut:
		fmt.Fprintf(&b, "[timed out after %d ms; the process group was killed]", d.DurationMs)
	default:
		fmt.Fprintf(&b, "[exit code %d, %d ms]", d.ExitCode, d.DurationMs)
	}
	if d.Truncated {
		b.WriteString(" [output truncated at 64 KiB per stream]")
	}
	return b.String()
}
