package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// commandTransport runs a stdio server like the SDK's CommandTransport, with one difference:
// the server's stdout passes through a line filter before the SDK reads it. The SDK's reader
// ends the connection — for every session using the server — on a line it cannot decode: one
// over its 16 MiB limit, nested deeper than encoding/json allows, or garbage a server printed.
// The filter drops garbage and answers an oversized or too-deep response with an error response
// for that request id instead, so only that call fails.
type commandTransport struct {
	cmd       *exec.Cmd
	terminate time.Duration
}

// maxUpstreamLine bounds one line from a stdio server (a result is bounded by maxResultBytes;
// the rest is room for the envelope).
const maxUpstreamLine = maxResultBytes + 64<<10

// maxUpstreamDepth bounds JSON nesting in one message from a server: encoding/json's own limit,
// past which the SDK's reader would end the connection. Below it a message passes, and what is
// too deep for us is judged where it matters, per tool (a schema: the tool is dropped) or per
// result, so one bad tool never fails a whole tools/list (issue 18 item 7).
const maxUpstreamDepth = 10000

func (t *commandTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	w := &childStdin{cmd: t.cmd, stdin: stdin, terminate: t.terminate}
	r := &upstreamFilter{br: bufio.NewReaderSize(stdout, 64<<10), max: maxUpstreamLine}
	return (&mcp.IOTransport{Reader: io.NopCloser(r), Writer: w, MaxLineLength: -1}).Connect(ctx)
}

// childStdin closes the connection the way the SDK does: close stdin, wait, SIGTERM, SIGKILL.
type childStdin struct {
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	terminate time.Duration
}

func (c *childStdin) Write(p []byte) (int, error) { return c.stdin.Write(p) }

func (c *childStdin) Close() error {
	if err := c.stdin.Close(); err != nil {
		return fmt.Errorf("closing stdin: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	wait := func() (error, bool) {
		select {
		case err := <-done:
			return err, true
		case <-time.After(c.terminate):
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return err
	}
	if c.cmd.Process.Signal(syscall.SIGTERM) == nil {
		if err, ok := wait(); ok {
			return err
		}
	}
	_ = c.cmd.Process.Kill()
	if err, ok := wait(); ok {
		return err
	}
	return errors.New("unresponsive subprocess")
}

// upstreamFilter passes on the lines of a server's stdout that are one JSON value within the
// bounds, substitutes an error response for an oversized or too-deep one, and drops the rest.
type upstreamFilter struct {
	br   *bufio.Reader
	max  int
	pend []byte
	err  error
}

// leadingID finds the id of a response near the start of a line: enough to fail the right
// call when the line itself is too big to parse.
var leadingID = regexp.MustCompile(`"id"\s*:\s*(-?[0-9]+|"(?:[^"\\]|\\.){0,200}")`)

func (f *upstreamFilter) Read(p []byte) (int, error) {
	for len(f.pend) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		line, head, tooLong, err := f.readLine()
		if err != nil {
			f.err = err
		}
		msg := bytes.TrimSpace(line)
		switch {
		case tooLong:
			f.substitute(head, fmt.Sprintf("the server sent a message over the %d-byte limit", f.max))
		case len(msg) == 0:
		case depth(msg) > maxUpstreamDepth:
			f.substitute(msg[:min(len(msg), 4096)], fmt.Sprintf("the server sent a message nested deeper than %d levels", maxUpstreamDepth))
		case !validJSON(msg):
			// Not a message (a log line on stdout, garbage): ignored, as the session must go on.
		default:
			f.pend = append(msg, '\n')
		}
	}
	n := copy(p, f.pend)
	f.pend = f.pend[n:]
	return n, nil
}

func validJSON(b []byte) bool {
	return (b[0] == '{' || b[0] == '[') && json.Valid(b)
}

// substitute answers the request whose id starts the dropped line with an error.
func (f *upstreamFilter) substitute(head []byte, msg string) {
	m := leadingID.FindSubmatch(head)
	if m == nil {
		return // no id: a notification or garbage; nothing waits for it
	}
	f.pend = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":%q}}`+"\n", m[1], msg)
}

// readLine returns the next line; for a line over max, only its first 4 KiB (head) and tooLong.
func (f *upstreamFilter) readLine() (line, head []byte, tooLong bool, err error) {
	for {
		chunk, err := f.br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > f.max {
				tooLong = true
				head = append(line, chunk...)[:min(len(line)+len(chunk), 4096)]
				line = nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) && (len(line) > 0 || tooLong) {
			return line, head, tooLong, nil
		}
		return line, head, tooLong, err
	}
}

// depth is the deepest nesting of objects and arrays in b (strings skipped).
func depth(b []byte) int {
	d, maxd, inStr, esc := 0, 0, false, false
	for _, c := range b {
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			d++
			maxd = max(maxd, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return maxd
}
