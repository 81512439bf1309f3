package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/quickjs"
)

// maxBridgePayload bounds one guest request (a tool input, a search query…).
const maxBridgePayload = 4 << 20

// MaxSavedValueBytes bounds one value a cell hands to results.save (its JSON text).
const MaxSavedValueBytes = 8 << 20

// MaxUndeliveredBytes bounds the results a run holds for its VM: calls keep running (and
// finishing) while a run is suspended, and their results wait here for the next wait.
const MaxUndeliveredBytes = 64 << 20

// hostSync implements synchronous requests: sync(op, json) → json.
func (r *Run) hostSync(vm *quickjs.VM, _ quickjs.Value, args []quickjs.Value) (quickjs.Value, error) {
	op, payload, err := r.request(vm, args)
	if err != nil {
		return quickjs.Undefined, err
	}
	if op == "timer.cancel" {
		var p struct {
			Timer int64 `json:"timer"`
		}
		_ = json.Unmarshal(payload, &p)
		r.cancelTimer(p.Timer)
		return vm.NewString("null")
	}
	res, err := r.host.Sync(op, payload)
	if err != nil {
		var ce *api.ToolError
		if errors.As(err, &ce) {
			// Keep the name and code: the guest catches a TypeError [unknown_tool], not an Error.
			return quickjs.Undefined, &quickjs.GuestError{Name: ce.Name, Message: ce.Message, Code: ce.Code}
		}
		return quickjs.Undefined, err
	}
	return vm.NewString(string(res))
}

// hostAsync implements asynchronous requests: async(op, json) → Promise. The host allocates the
// call id and holds the resolvers: the guest only ever sees the promise.
func (r *Run) hostAsync(vm *quickjs.VM, _ quickjs.Value, args []quickjs.Value) (quickjs.Value, error) {
	op, payload, err := r.request(vm, args)
	if err != nil {
		return quickjs.Undefined, err
	}
	if len(r.calls) >= r.maxPending+MaxQueued {
		return quickjs.Undefined, &api.ToolError{Name: "RangeError", Code: "too_many_pending_calls",
			Message: fmt.Sprintf("too many pending nested calls: %d are running or queued (maxPendingToolCalls %d + queue %d); await some before starting more", len(r.calls), r.maxPending, MaxQueued)}
	}
	cap, err := vm.NewPromise()
	if err != nil {
		return quickjs.Undefined, err
	}
	r.nextID++
	c := &call{id: r.nextID, op: op, payload: payload, started: time.Now(), resolve: cap.Resolve, reject: cap.Reject}
	r.calls[c.id] = c
	switch op {
	case "sleep":
		var p struct {
			Ms float64 `json:"ms"`
		}
		_ = json.Unmarshal(payload, &p)
		c.label = "setTimeout"
		d := time.Duration(min(p.Ms, float64(24*time.Hour/time.Millisecond)) * float64(time.Millisecond))
		id := c.id
		c.deadline = time.Now().Add(d)
		c.timer = time.AfterFunc(d, func() { r.push(completion{id: id, result: []byte("true"), noForward: true}) })
	case "yield":
		c.label = yieldLabel(payload)
		r.yieldAsked = true
		r.yielded = c
	default:
		c.label = r.host.PendingLabel(op, payload)
		c.host = &Call{ID: r.callID(c.id), Op: op, Payload: payload, run: r, n: c.id}
		if pc, ok := r.host.(Prechecker); ok {
			pre, err := pc.Precheck(c.host)
			if err != nil {
				r.push(completion{id: c.id, err: err})
				break
			}
			c.host.Prechecked = pre
			c.seq = c.host.Sequential
		}
		if r.slotFree(op) {
			// Its own limits bound it (the swarm's children): it never waits for, nor takes, one
			// of the slots the cell's tool calls share.
			r.mu.Lock()
			closed := r.closed
			if !closed {
				r.free++
			}
			r.mu.Unlock()
			if !closed {
				r.startCall(c, true)
			}
			break
		}
		r.queue = append(r.queue, c)
		r.startQueued()
	}
	return cap.Promise, nil
}

func (r *Run) request(vm *quickjs.VM, args []quickjs.Value) (string, []byte, error) {
	if len(args) < 2 {
		return "", nil, errors.New("bridge: malformed request")
	}
	op, err := vm.ToString(args[0], 64)
	if err != nil {
		return "", nil, err
	}
	limit := maxBridgePayload
	if op == "results.save" {
		limit = MaxSavedValueBytes
	}
	payload, err := vm.ToString(args[1], limit)
	if err != nil {
		var tl *quickjs.TooLongError
		if errors.As(err, &tl) {
			if op == "results.save" {
				return "", nil, &api.ToolError{Name: "RangeError", Code: "result_too_large", Message: fmt.Sprintf("results.save: the value is %d bytes of JSON (limit %d)", tl.Len, limit)}
			}
			return "", nil, &api.ToolError{Name: "RangeError", Message: fmt.Sprintf("request too large: %d bytes (limit %d)", tl.Len, limit)}
		}
		return "", nil, err
	}
	return op, []byte(payload), nil
}

// startQueued starts queued calls while concurrency slots are free (E3), in call order. A call
// of a sequential group waits while another call of its group is started and not yet delivered,
// and so do the later calls of its group (they keep their order); other calls pass it. A
// slot-free call (see SlotFree) starts whatever the slots.
func (r *Run) startQueued() {
	var held []*call
	var waiting map[string]bool
	i := 0
	for i < len(r.queue) {
		c := r.queue[i]
		if c.seq != "" && (r.seqBusy[c.seq] || waiting[c.seq]) {
			if waiting == nil {
				waiting = map[string]bool{}
			}
			waiting[c.seq] = true
			held = append(held, c)
			i++
			continue
		}
		free := r.slotFree(c.op)
		r.mu.Lock()
		if r.closed || !free && r.running+r.remote >= r.maxPending {
			r.mu.Unlock()
			break
		}
		if free {
			r.free++
		} else {
			r.running++
		}
		r.mu.Unlock()
		i++
		if c.seq != "" {
			r.seqBusy[c.seq] = true
		}
		r.startCall(c, free)
	}
	if held == nil {
		r.queue = r.queue[i:]
		return
	}
	r.queue = append(held, r.queue[i:]...)
}

// slotFree reports whether the host runs op without a concurrency slot.
func (r *Run) slotFree(op string) bool {
	sf, ok := r.host.(SlotFree)
	return ok && sf.SlotFree(op)
}

// startCall runs a call on its own goroutine; the caller counted it in r.running (or r.free, for
// a slot-free call).
func (r *Run) startCall(c *call, free bool) {
	cctx, cancel := context.WithCancel(r.ctx)
	c.cancel = cancel
	c.started = time.Now()
	r.wg.Add(1)
	hc := c.host
	c.host = nil
	c.running = hc
	c.approval = nil
	go func() {
		defer r.wg.Done()
		defer cancel()
		res, err := r.safeAsync(cctx, hc)
		done := func() { // the call stops counting in Running (and frees its slot)
			if free {
				r.free--
			} else {
				r.running--
			}
		}
		r.mu.Lock()
		if r.awaiting[hc.n] != nil && r.awaiting[hc.n].call == hc {
			delete(r.awaiting, hc.n)
		}
		if hc.withdrawn {
			// Export is withdrawing the call: it decides whether this completion counts.
			hc.held = &completion{id: hc.n, result: res, err: err, untrusted: hc.untrusted}
			done()
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		// The result first, then the count: Running stays above 0 until the completion is ready
		// for the VM and, for a suspended run, handed to the result sink (the shared store), so a
		// process that drains until Running is 0, or closes a run whose Running is 0, never drops
		// a result on its way (issue 20: a rolling restart lost one). The second wake lets a
		// driving VM start queued calls in the slot this frees.
		r.push(completion{id: hc.n, result: res, err: err, untrusted: hc.untrusted})
		r.mu.Lock()
		done()
		r.mu.Unlock()
		r.wake()
	}()
}

// safeAsync calls the host, turning a panicking tool into an error: a tool bug must not take the
// process down.
func (r *Run) safeAsync(ctx context.Context, c *Call) (res []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, &api.ToolError{Name: "Error", Code: string(api.CodeInternal), Message: fmt.Sprintf("tool failed: internal error (%v)", p)}
		}
	}()
	return r.host.Async(ctx, c)
}

func (r *Run) push(c completion) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	sink := r.sink
	if !r.detached || c.noForward {
		sink = nil
	}
	if r.readyBytes+len(c.result) > MaxUndeliveredBytes {
		// A suspended run whose calls keep finishing must not grow host memory without bound:
		// past the budget, results are replaced by an error the cell can catch.
		c = completion{id: c.id, err: &api.ToolError{Name: "RangeError", Code: "result_dropped",
			Message: fmt.Sprintf("result dropped: this run already holds %d bytes of undelivered results (limit %d); call wait to receive them", r.readyBytes, MaxUndeliveredBytes)}}
	}
	r.readyBytes += len(c.result)
	r.ready = append(r.ready, c)
	r.mu.Unlock()
	if sink != nil {
		sink(r.callID(c.id), c.data())
	}
	r.wake()
}

func (r *Run) cancelTimer(id int64) {
	for _, c := range r.calls {
		if c.op != "sleep" || c.settled {
			continue
		}
		var p struct {
			Timer int64 `json:"timer"`
		}
		_ = json.Unmarshal(c.payload, &p)
		if p.Timer == id {
			if c.timer != nil && c.timer.Stop() {
				r.push(completion{id: c.id, result: []byte("false"), noForward: true})
			}
			return
		}
	}
}

// deliverReady settles guest promises for completed calls, in the order they completed.
func (r *Run) deliverReady(vm *quickjs.VM) int {
	r.mu.Lock()
	ready := r.ready
	r.ready, r.readyBytes = nil, 0
	r.mu.Unlock()
	n := 0
	for _, done := range ready {
		c := r.calls[done.id]
		if c == nil || c.settled {
			continue
		}
		if done.reissue {
			r.reissueLocked(c)
			continue
		}
		c.settled = true
		delete(r.calls, c.id)
		if c.owner != "" {
			c.owner = ""
			r.remote--
		}
		if c.seq != "" {
			delete(r.seqBusy, c.seq)
		}
		r.taint(done.untrusted)
		if c.op != "sleep" && c.op != "yield" {
			r.delivered = append(r.delivered, r.callID(c.id))
		}
		n++
		r.settle(vm, c, done)
		vm.Free(c.resolve)
		vm.Free(c.reject)
		if vm.Dead() != nil {
			return n
		}
	}
	r.startQueued()
	return n
}

func (r *Run) settle(vm *quickjs.VM, c *call, done completion) {
	if done.err != nil {
		ce, ok := done.err.(*api.ToolError)
		if !ok {
			ce = &api.ToolError{Name: "Error", Message: done.err.Error()}
		}
		ev, err := r.makeGuestErrorValue(vm, ce)
		if err != nil {
			return
		}
		res, _ := vm.Call(c.reject, quickjs.Undefined, ev)
		vm.Free(res)
		vm.Free(ev)
		return
	}
	body := done.result
	if len(body) == 0 {
		body = []byte("null")
	}
	v, err := vm.ParseJSON(body)
	if err != nil {
		// The host produced invalid JSON: reject rather than hand over garbage.
		vm.Free(vm.TakeException())
		ev, err := r.makeGuestErrorValue(vm, &api.ToolError{Name: "Error", Code: string(api.CodeInternal), Message: "tool result is not valid JSON"})
		if err != nil {
			return
		}
		res, _ := vm.Call(c.reject, quickjs.Undefined, ev)
		vm.Free(res)
		vm.Free(ev)
		return
	}
	res, _ := vm.Call(c.resolve, quickjs.Undefined, v)
	vm.Free(res)
	vm.Free(v)
}

// makeGuestError adapts quickjs.GuestError to the prelude's error builder.
func (r *Run) makeGuestError(vm *quickjs.VM, e *quickjs.GuestError) (quickjs.Value, error) {
	return r.makeGuestErrorValue(vm, &api.ToolError{Name: e.Name, Message: e.Message, Code: e.Code})
}

func (r *Run) makeGuestErrorValue(vm *quickjs.VM, ce *api.ToolError) (quickjs.Value, error) {
	b, _ := json.Marshal(ce)
	s, err := vm.NewString(string(b))
	if err != nil {
		return quickjs.Undefined, err
	}
	defer vm.Free(s)
	return vm.Call(r.eng.fns.MakeError, quickjs.Undefined, s)
}

var cellFrame = regexp.MustCompile(`cell\.js:(\d+):(\d+)`)

// thrown is a thrown value described as plain data by the prelude.
type thrown struct {
	Name, Message, Stack, Code string
	// Missing is the cell's last read of a name tools, MCP or MCP.<server> do not have.
	Missing   *missingRead
	line, col int // first frame in the evaluated program, 0 when none
}

type missingRead struct {
	Kind   string `json:"kind"`
	Server string `json:"server"`
	Name   string `json:"name"`
	Stack  string `json:"stack,omitempty"`
}

// describeThrown asks the prelude to describe a thrown value; ok is false when that failed.
func (r *Run) describeThrown(vm *quickjs.VM, reason quickjs.Value) (thrown, bool) {
	var d thrown
	s, err := vm.Call(r.eng.fns.DescribeError, quickjs.Undefined, reason)
	if err != nil {
		vm.Free(vm.TakeException())
		return d, false
	}
	defer vm.Free(s)
	text, err := vm.ToString(s, 64<<10)
	if err != nil || json.Unmarshal([]byte(text), &d) != nil {
		return d, false
	}
	if m := cellFrame.FindStringSubmatch(d.Stack); m != nil {
		d.line, _ = strconv.Atoi(m[1])
		d.col, _ = strconv.Atoi(m[2])
	}
	return d, true
}

// describe formats a thrown value as "Name: message (line L:C)" with the position mapped into
// the model's own code.
func (r *Run) describe(vm *quickjs.VM, reason quickjs.Value) string {
	d, ok := r.describeThrown(vm, reason)
	if !ok {
		return "Uncaught exception"
	}
	if msg, code, ok := r.explainMissing(d); ok {
		d.Message, d.Code = msg, code
	}
	var b strings.Builder
	switch {
	case d.Name == "Uncaught":
		b.WriteString("Uncaught " + d.Message)
	case d.Message == "":
		b.WriteString(d.Name)
	default:
		b.WriteString(d.Name + ": " + d.Message)
	}
	if d.Code != "" {
		b.WriteString(" [" + d.Code + "]")
	}
	if d.line > 0 && r.program != nil {
		if l, c, ok := r.program.MapPosition(d.line, d.col); ok {
			fmt.Fprintf(&b, " (line %d:%d)", l, c)
		}
	}
	return b.String()
}

// explainMissing turns the engine's TypeError for calling or dereferencing a name that tools,
// MCP or MCP.<server> do not have ("not a function", "cannot read property 'x' of undefined")
// into the catalog's explanation with the nearest names: the cell read that name as undefined on
// the line that failed (issue 22 item 4: feature detection reads undefined; a call still says
// what exists).
func (r *Run) explainMissing(d thrown) (msg, code string, ok bool) {
	m := d.Missing
	if d.Name != "TypeError" || m == nil || m.Name == "" {
		return "", "", false
	}
	if d.Message != "not a function" && !(strings.HasPrefix(d.Message, "cannot read property ") && strings.HasSuffix(d.Message, " of undefined")) {
		return "", "", false
	}
	if mm := cellFrame.FindStringSubmatch(m.Stack); mm != nil {
		if line, _ := strconv.Atoi(mm[1]); line != d.line {
			return "", "", false // the missing read was elsewhere: not this failure
		}
	}
	p, _ := json.Marshal(struct {
		Kind   string `json:"kind"`
		Server string `json:"server"`
		Name   string `json:"name"`
	}{m.Kind, m.Server, m.Name})
	_, err := r.host.Sync("unknown", p)
	var te *api.ToolError
	if !errors.As(err, &te) || te.Message == "" {
		return "", "", false
	}
	return te.Message, te.Code, true
}

// describeSyntax formats the syntax error of a cell that did not compile. An error in the
// wrapper's closing line is about our `})`, not the model's code: it is replaced by what the model
// can fix (a bracket never closed, an operator with nothing after it), at a position in its code.
func (r *Run) describeSyntax(vm *quickjs.VM, exc quickjs.Value) string {
	if d, ok := r.describeThrown(vm, exc); ok && d.line > 0 && r.program != nil {
		if e, ok := r.program.EndsEarly(d.line, d.col); ok {
			return fmt.Sprintf("SyntaxError: %s (line %d:%d)", e.Msg, e.Line, e.Column) + r.program.SyntaxHint()
		}
	}
	return r.describe(vm, exc) + r.program.SyntaxHint()
}

// yieldLabel names a yield_control call in pendingToolCalls with the cell's reason, so the model
// (and a person reading the trajectory) sees why the run paused: `yield_control("batch 2")`.
// The reason is guest text: cut to a bound, never trusted as structure.
func yieldLabel(payload []byte) string {
	var p struct {
		Reason string `json:"reason"`
	}
	_ = json.Unmarshal(payload, &p)
	if p.Reason == "" {
		return "yield_control"
	}
	const maxReason = 200
	if r := []rune(p.Reason); len(r) > maxReason {
		p.Reason = string(r[:maxReason]) + "…"
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(p.Reason)
	return "yield_control(" + strings.TrimSuffix(b.String(), "\n") + ")"
}
