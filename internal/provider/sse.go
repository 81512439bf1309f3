package provider

import (
	"bytes"
	"net/http"
	"strings"
)

const (
	peekEvents   = 5        // DebugSSEPeek logs this many events
	peekData     = 2 << 10  // bytes of one event's data kept for a peek
	maxSSELine   = 64 << 10 // longer lines are counted, not kept
	maxEventName = 64
)

// sseTap watches a server-sent event stream as the SDK reads it and logs each event (D1). It
// sees the wire, so it shows what the server really sent (pings, errors, `[DONE]`) whatever
// the SDK makes of it. Memory is bounded however long the lines or the stream.
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
