package dispatch

import (
	"encoding/json"
	"math"
	"strconv"
	"sync"

	"github.com/codemode-go/codemode/api"
)

// One progress stream for a run (issue 21 item 1). A cell may run several nested calls at once,
// each with its own progress (an MCP server's notifications/progress: a value, maybe a total, maybe
// a message); the MCP client that asked exec or wait for progress gets one stream with a single
// token, whose values must increase. So each nested call that reports anything becomes one part
// worth 100 of the total: a part with a known total advances by 100·progress/total, one without
// stays at 0 until its call returns, and every part is full (100) when its call returns. The
// stream is then progress = Σ parts, total = 100 × parts that reported so far — monotonic, since
// parts only grow; the total grows when another call starts reporting (the percentage can then
// drop: more work became known). One nested call reporting 0, 50, 100 of 100 gives exactly 0, 50,
// 100 of 100. Each message is labelled with the call's tool id: "mcp:srv:tool: <message>", or
// "mcp:srv:tool: 50/100" when the server sent none.

// combined is the state of a run's progress stream.
type combined struct {
	mu    sync.Mutex
	parts map[string]*part // by nested call id
	sum   float64
}

type part struct {
	value float64 // 0–100
	done  bool
}

// maxParts bounds the calls tracked (a cell running thousands of reporting calls): past it, new
// calls' updates still reach the client, labelled, without moving the values.
const maxParts = 4096

// report records one update of call callID and returns the stream's progress and total and the
// update's message (without the tool label).
func (c *combined) report(callID string, b api.ContentBlock) (progress, total float64, msg string) {
	p, t, hasP := progressMeta(b.Meta)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.parts == nil {
		c.parts = map[string]*part{}
	}
	pt := c.parts[callID]
	if pt == nil && len(c.parts) < maxParts {
		pt = &part{}
		c.parts[callID] = pt
	}
	if pt != nil && !pt.done && hasP && t > 0 {
		v := 100 * math.Min(math.Max(p/t, 0), 1)
		if v > pt.value {
			c.sum += v - pt.value
			pt.value = v
		}
	}
	msg = b.Text
	if b.Type != "" && b.Type != "text" {
		msg = "[" + b.Type + "]"
	}
	if msg == "" && hasP {
		msg = strconv.FormatFloat(p, 'f', -1, 64)
		if t > 0 {
			msg += "/" + strconv.FormatFloat(t, 'f', -1, 64)
		}
	}
	return c.sum, 100 * float64(len(c.parts)), msg
}

// current is the stream's progress and total now.
func (c *combined) current() (progress, total float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sum, 100 * float64(len(c.parts))
}

// finish marks call callID's part full; ok reports whether that moved the stream (the call had
// reported progress and was not at 100).
func (c *combined) finish(callID string) (progress, total float64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pt := c.parts[callID]
	if pt == nil || pt.done {
		return 0, 0, false
	}
	pt.done = true
	moved := pt.value < 100
	c.sum += 100 - pt.value
	pt.value = 100
	return c.sum, 100 * float64(len(c.parts)), moved
}

// progressMeta reads the {"progress":p,"total":t} an MCP call's update carries.
func progressMeta(meta json.RawMessage) (p, t float64, ok bool) {
	if len(meta) == 0 {
		return 0, 0, false
	}
	var m struct {
		Progress *float64 `json:"progress"`
		Total    float64  `json:"total"`
	}
	if json.Unmarshal(meta, &m) != nil || m.Progress == nil || math.IsNaN(*m.Progress) || math.IsInf(*m.Progress, 0) ||
		math.IsNaN(m.Total) || math.IsInf(m.Total, 0) {
		return 0, 0, false
	}
	return *m.Progress, m.Total, true
}
