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
//
// The same pair keeps the protocol exact where the SDK does not (issue 18 item 8, issue 19 item
// 6): a request id that would not survive the SDK's decoding byte for byte (1.5e308, 1.0,
// "\u0041") is replaced by one of ours on the way in and restored on the way out; a response
// error without a code gets -32603; and after notifications/cancelled for a request in flight,
// its response is not written (the SDK cancels the handler; the spec says the receiver should
// not respond).

// MaxStdioLine bounds one message on stdio (the SDK's own default).
const MaxStdioLine = mcp.DefaultMaxLineLength

// StdioTransport serves MCP on r (stdin) and w (stdout), answering malformed and oversized
// lines with JSON-RPC errors instead of ending the session.
func StdioTransport(r io.Reader, w io.Writer) mcp.Transport {
	return stdioTransport(r, w, MaxStdioLine)
}

func stdioTransport(r io.Reader, w io.Writer, maxLine int) mcp.Transport {
	fl := &inflight{byOurs: map[string]*stdioCall{}, byTheirs: map[string]*stdioCall{}}
	lw := &lockedWriter{w: w, fl: fl}
	return &mcp.IOTransport{
		Reader:        &lineFilter{br: bufio.NewReaderSize(r, 64<<10), src: r, out: lw, max: maxLine, fl: fl},
		Writer:        lw,
		MaxLineLength: -1, // the filter bounds lines
	}
}

// inflight are the client's requests the SDK has not answered yet.
type inflight struct {
	mu       sync.Mutex
	byOurs   map[string]*stdioCall // by the id the SDK sees (canonicalID)
	byTheirs map[string]*stdioCall // by the client's id (canonicalID)
	n        int64
}

type stdioCall struct {
	theirs, ours json.RawMessage
	cancelled    bool
}

// maxInflight bounds the table (a client that never reads its answers).
const maxInflight = 4096

// admit records a request with id and returns the id the SDK must see (nil: unchanged).
func (f *inflight) admit(id json.RawMessage) json.RawMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := &stdioCall{theirs: id, ours: id}
	if !idRoundTrips(id) {
		f.n++
		c.ours = json.RawMessage(fmt.Sprintf(`"codemode-id-%d"`, f.n))
	}
	if len(f.byOurs) < maxInflight {
		f.byOurs[canonicalID(c.ours)] = c
		f.byTheirs[canonicalID(id)] = c
	}
	if bytes.Equal(c.ours, id) {
		return nil
	}
	return c.ours
}

// cancel marks the request the client cancelled.
func (f *inflight) cancel(theirs json.RawMessage) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.byTheirs[canonicalID(theirs)]; c != nil {
		c.cancelled = true
	}
}

// answer takes a response line of the SDK: it returns the line to write (nil: none).
func (f *inflight) answer(line []byte) []byte {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	if json.Unmarshal(line, &m) != nil || m.Method != nil || len(m.ID) == 0 {
		return fixEnvelope(line, nil, nil) // a request or notification of the server's
	}
	f.mu.Lock()
	c := f.byOurs[canonicalID(m.ID)]
	if c != nil {
		delete(f.byOurs, canonicalID(c.ours))
		delete(f.byTheirs, canonicalID(c.theirs))
	}
	f.mu.Unlock()
	switch {
	case c == nil:
		return fixEnvelope(line, nil, nil)
	case c.cancelled:
		return nil
	case !bytes.Equal(c.ours, c.theirs):
		return fixEnvelope(line, c.ours, c.theirs)
	}
	return fixEnvelope(line, nil, nil)
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
	fl *inflight // nil for the filter's own replies
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	out := p
	if l.fl != nil {
		if out = l.fl.answer(bytes.TrimRight(p, "\n")); out == nil {
			return len(p), nil // the client cancelled this request
		}
		out = append(out, '\n')
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// reply writes one of the filter's own lines (not a response of the SDK's).
func (l *lockedWriter) reply(p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil } // stdout stays open for the process

type lineFilter struct {
	br   *bufio.Reader
	src  io.Reader
	out  *lockedWriter
	max  int
	pend []byte // the current good line (with its newline) not yet read by the SDK
	err  error
	fl   *inflight
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
			if c, ok := f.check(msg); ok {
				f.pend = append(f.rewrite(msg, c), '\n')
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
func (f *lineFilter) check(msg []byte) (messageCheck, bool) {
	if jsonDepth(msg) > maxDepth {
		f.reply(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: the message nests deeper than %d levels", maxDepth))
		return messageCheck{}, false
	}
	if !json.Valid(msg) {
		f.reply(nil, jsonrpc.CodeParseError, "parse error: the line is not valid JSON")
		return messageCheck{}, false
	}
	if msg[0] == '[' {
		f.reply(nil, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported: send one message per line")
		return messageCheck{}, false
	}
	c := checkMessage(msg)
	if c.invalid == "" {
		m, err := jsonrpc.DecodeMessage(msg)
		if r, ok := m.(*jsonrpc.Response); ok && err == nil && r.Result == nil && r.Error == nil {
			err = errors.New("a message needs a method (request or notification) or a result or error (response)")
		}
		if err != nil {
			c.invalid = "invalid request: " + err.Error()
		}
	}
	if c.invalid != "" {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(msg, &m)
		f.reply(m.ID, jsonrpc.CodeInvalidRequest, c.invalid)
		return c, false
	}
	if f.fl != nil && c.cancelID != nil {
		f.fl.cancel(c.cancelID)
	}
	return c, true
}

// rewrite returns the line the SDK reads: a request's id replaced when it would not round-trip.
func (f *lineFilter) rewrite(msg []byte, c messageCheck) []byte {
	if f.fl == nil {
		return msg
	}
	if c.id == nil || c.method == "" {
		return msg
	}
	if ours := f.fl.admit(c.id); ours != nil {
		return replaceID(msg, c.idAt, len(c.id), ours)
	}
	return msg
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
	f.out.reply(append(b, '\n'))
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
