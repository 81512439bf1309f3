package provider

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
)

const (
	peekEvents   = 5        // DebugSSEPeek logs this many events
	peekData     = 2 << 10  // bytes of one event's data kept for a peek
	maxSSELine   = 64 << 10 // longer lines are counted, not kept
	maxEventName = 64
)

// sseTap watches a server-sent event stream as it is read and logs each event (D1). It sees
// the bytes, not the decoder's view of them, so it shows what the server really sent (pings,
// comments, errors, `[DONE]`) even where the decoder stops early or refuses an event. Memory
// is bounded however long the lines or the stream.
type sseTap struct {
	c        *call
	peek     bool
	n        int
	line     []byte
	overflow bool
	event    string
	data     []byte
	dataLen  int
	hasData  bool
	done     bool // a `data: [DONE]` line (OpenAI's end of stream)
}

func (c *call) newTap(res *http.Response) *sseTap {
	if c.s.Debug.SSE == "" || !strings.HasPrefix(strings.ToLower(res.Header.Get("Content-Type")), "text/event-stream") {
		return nil
	}
	return &sseTap{c: c, peek: c.s.Debug.SSE == DebugSSEPeek}
}

func (t *sseTap) feed(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			t.keep(p)
			return
		}
		t.keep(p[:i])
		t.lineDone()
		p = p[i+1:]
	}
}

func (t *sseTap) keep(b []byte) {
	if t.overflow {
		t.dataLen += len(b)
		return
	}
	if len(t.line)+len(b) > maxSSELine {
		t.overflow = true
		t.dataLen += len(t.line) + len(b)
		t.line = t.line[:0]
		return
	}
	t.line = append(t.line, b...)
}

func (t *sseTap) lineDone() {
	line := bytes.TrimSuffix(t.line, []byte("\r"))
	over := t.overflow
	t.line, t.overflow = t.line[:0], false
	if over {
		t.hasData = true // an over-long line: counted in dataLen, its content dropped
		return
	}
	if len(line) == 0 {
		t.dispatch()
		return
	}
	name, value, _ := bytes.Cut(line, []byte(":"))
	value = bytes.TrimPrefix(value, []byte(" "))
	switch string(name) {
	case "event":
		t.event = clean(string(value), maxEventName)
	case "data":
		if t.hasData && len(t.data) < peekData {
			t.data = append(t.data, '\n')
		}
		t.hasData = true
		t.done = t.done || string(bytes.TrimSpace(value)) == "[DONE]"
		t.dataLen += len(value)
		if room := peekData - len(t.data); room > 0 && t.peek && t.n < peekEvents {
			t.data = append(t.data, value[:min(len(value), room)]...)
		}
	}
}

func (t *sseTap) dispatch() {
	if t.event == "" && !t.hasData {
		return
	}
	t.n++
	typ := t.event
	if typ == "" {
		typ = "message"
		if t.done {
			typ = "[DONE]"
		}
	}
	log := t.c.s.Logger
	switch {
	case !t.peek:
		log.Info("model sse event", "provider", t.c.provider, "n", t.n, "event", typ, "bytes", t.dataLen)
	case t.n <= peekEvents:
		data := redactedSnapshot(t.data, t.c.s.APIKey, peekData)
		log.Info("model sse peek", "provider", t.c.provider, "n", t.n, "event", typ, "bytes", t.dataLen, "data", data)
	}
	t.event, t.data, t.dataLen, t.hasData, t.done = "", t.data[:0], 0, false, false
}

// sseEvent is one dispatched server-sent event.
type sseEvent struct {
	// name is the `event:` field ("" when the server sent none, as OpenAI's streams do).
	name string
	// data is the event's `data:` lines joined by newlines. It is only valid until the next
	// call to next.
	data []byte
}

// sseReader decodes a text/event-stream body into events, as the HTML Living Standard's
// event-stream interpretation says: lines end in LF or CRLF, `:` starts a comment, one space
// after the colon is dropped, data lines accumulate and a blank line dispatches them. `id`
// and `retry` are read and ignored (we never reconnect). An event still pending when the body
// ends is dispatched too: a server that omits the last blank line still said what it said,
// and a cut-off JSON payload fails to parse anyway. The body is already bounded by
// MaxResponseBytes, so a line or an event cannot outgrow it.
type sseReader struct {
	r    *bufio.Reader
	line []byte
	name []byte
	data []byte
	has  bool // a data line was seen for the pending event
	err  error
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 8<<10)}
}

// next returns the next event, or io.EOF at the end of the body, or the error reading it.
func (s *sseReader) next() (sseEvent, error) {
	if s.err != nil {
		return sseEvent{}, s.err
	}
	s.name, s.data, s.has = s.name[:0], s.data[:0], false
	for {
		line, err := s.readLine()
		if err != nil {
			s.err = err
			if errors.Is(err, io.EOF) && len(line) > 0 {
				s.field(line)
			}
			if errors.Is(err, io.EOF) && s.has {
				return sseEvent{name: string(s.name), data: s.data}, nil
			}
			return sseEvent{}, err
		}
		if len(line) == 0 {
			if s.has {
				return sseEvent{name: string(s.name), data: s.data}, nil
			}
			s.name = s.name[:0] // an event with no data is not dispatched
			continue
		}
		s.field(line)
	}
}

// field applies one non-empty line to the pending event.
func (s *sseReader) field(line []byte) {
	name, value, _ := bytes.Cut(line, []byte(":"))
	if len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	switch string(name) {
	case "event":
		s.name = append(s.name[:0], value...)
	case "data":
		if s.has {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, value...)
		s.has = true
	}
}

// readLine returns the next line without its LF or CRLF. At the end of the body it returns
// the unterminated rest (possibly empty) with io.EOF.
func (s *sseReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		chunk, err := s.r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			s.line = append(s.line, chunk...)
			continue
		}
		line := chunk
		if len(s.line) > 0 {
			s.line = append(s.line, chunk...)
			line = s.line
		}
		if err != nil {
			return bytes.TrimSuffix(line, []byte("\r")), err
		}
		line = line[:len(line)-1]
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		return line, nil
	}
}
