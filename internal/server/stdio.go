package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A robust stdio transport. The SDK's newline-delimited reader ends the session on the first
// line it cannot decode (no -32700 reply, and any response still in flight is lost), and on a
// line over its 16 MiB limit. A client bug or a stray byte would then kill the gateway. Here a
// filter sits between stdin and the SDK's reader: it passes on only lines that are one
// well-formed JSON-RPC message, answers every other line itself with a JSON-RPC error (-32700
// for invalid JSON, -32600 for an invalid or oversized message or a batch), and goes on reading.
// Replies and the SDK's own output share one locked writer, so lines never interleave.

// MaxStdioLine bounds one message on stdio (the SDK's own default).
const MaxStdioLine = mcp.DefaultMaxLineLength

// StdioTransport serves MCP on r (stdin) and w (stdout), answering malformed and oversized
// lines with JSON-RPC errors instead of ending the session.
func StdioTransport(r io.Reader, w io.Writer) mcp.Transport {
	return stdioTransport(r, w, MaxStdioLine)
}

func stdioTransport(r io.Reader, w io.Writer, maxLine int) mcp.Transport {
	lw := &lockedWriter{w: w}
	return &mcp.IOTransport{
		Reader:        &lineFilter{br: bufio.NewReaderSize(r, 64<<10), src: r, out: lw, max: maxLine},
		Writer:        lw,
		MaxLineLength: -1, // the filter bounds lines
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil } // stdout stays open for the process

type lineFilter struct {
	br   *bufio.Reader
	src  io.Reader
	out  *lockedWriter
	max  int
	pend []byte // the current good line (with its newline) not yet read by the SDK
	err  error
}

func (f *lineFilter) Read(p []byte) (int, error) {
	for len(f.pend) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		line, tooLong, err := f.readLine()
		if err != nil {
			f.err = err
		}
		if tooLong {
			f.reply(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("message too large: a line exceeds %d bytes", f.max))
			continue
		}
		if msg := bytes.TrimSpace(line); len(msg) > 0 {
			if f.check(msg) {
				f.pend = append(msg, '\n')
			}
		}
	}
	n := copy(p, f.pend)
	f.pend = f.pend[n:]
	return n, nil
}

func (f *lineFilter) Close() error {
	if c, ok := f.src.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// readLine returns the next line without its newline. A line longer than max is read to its end
// and discarded (tooLong).
func (f *lineFilter) readLine() (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := f.br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > f.max+2 { // +2: a \r\n ending does not count
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && (len(buf) > 0 || tooLong) && errors.Is(err, io.EOF) {
			return buf, tooLong, nil // the last line had no newline; EOF comes next call
		}
		return buf, tooLong, err
	}
}

// check reports whether msg is one JSON-RPC message the SDK can take, replying with an error
// when it is not.
func (f *lineFilter) check(msg []byte) bool {
	if !json.Valid(msg) {
		f.reply(nil, jsonrpc.CodeParseError, "parse error: the line is not valid JSON")
		return false
	}
	if msg[0] == '[' {
		f.reply(nil, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported: send one message per line")
		return false
	}
	m, err := jsonrpc.DecodeMessage(msg)
	if r, ok := m.(*jsonrpc.Response); ok && err == nil && r.Result == nil && r.Error == nil {
		err = errors.New("a message needs a method (request or notification) or a result or error (response)")
	}
	if err != nil {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(msg, &m)
		f.reply(m.ID, jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
		return false
	}
	return true
}

func (f *lineFilter) reply(id json.RawMessage, code int, msg string) {
	if len(id) == 0 || !validID(id) {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}{"2.0", id, rpcError{code, msg}})
	_, _ = f.out.Write(append(b, '\n'))
}

// validID reports whether id is a JSON-RPC id (a string or a number) worth echoing.
func validID(id json.RawMessage) bool {
	var v any
	if json.Unmarshal(id, &v) != nil {
		return false
	}
	switch v.(type) {
	case string, float64:
		return true
	}
	return false
}
