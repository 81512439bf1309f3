package trajectory

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
)

// Limits bound what a Writer keeps (issue 18 item 6: one loop of failing nested calls grew an
// audit log by 101 MB in 10 s, one upstream's progress flood by 63 MB). A zero field takes its
// default. What a bound leaves out is counted and said in the log itself, by an event of kind
// api.EventDropped under the call it concerns.
type Limits struct {
	// MaxBytes bounds one file (Create only): an event that would take it past the bound rotates
	// it first — path becomes path.1, path.1 path.2, … — so the log holds at most
	// (MaxFiles+1) × MaxBytes. Default 64 MiB.
	MaxBytes int64
	// MaxFiles is how many rotated files are kept beside the current one (the oldest is removed).
	// Default 4.
	MaxFiles int
	// MaxEventsPerCall bounds the nested calls, approvals and progress updates recorded for one
	// exec call (all its waits included); further ones are counted. Control and direct calls —
	// the model's own — are always recorded. Default 10,000.
	MaxEventsPerCall int
	// UpdateInterval coalesces progress updates: at most UpdateBurst per nested call per
	// interval are recorded, the others counted; the last one of a call is recorded when the
	// call ends, so its final progress is never lost. Default 1 s.
	UpdateInterval time.Duration
}

// Defaults of Limits.
const (
	DefaultMaxBytes         = 64 << 20
	DefaultMaxFiles         = 4
	DefaultMaxEventsPerCall = 10_000
	DefaultUpdateInterval   = time.Second
	// UpdateBurst is how many progress updates of one nested call an interval records: a few
	// steps ("1 of 3", "2 of 3", "3 of 3") stay whole, a flood costs a few lines a second.
	UpdateBurst = 10
	// maxHeldUpdate bounds the size of the last coalesced update a call keeps for its end (a
	// bigger one is only counted): at most maxTracked of them are held.
	maxHeldUpdate = 16 << 10
)

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	if l.MaxEventsPerCall <= 0 {
		l.MaxEventsPerCall = DefaultMaxEventsPerCall
	}
	if l.UpdateInterval <= 0 {
		l.UpdateInterval = DefaultUpdateInterval
	}
	return l
}

// maxTracked bounds the calls a Writer keeps counts for; past it the counts are reported and
// start again.
const maxTracked = 4096

// Writer appends events to an io.Writer as JSON Lines, one sanitized event per line. It is safe
// for concurrent use; each event is flushed as it is written, so a crash loses nothing that was
// recorded. Write errors are kept (Err) rather than returned: recording must never fail a call.
type Writer struct {
	mu     sync.Mutex
	w      *bufio.Writer
	closer io.Closer
	err    error
	n      int64

	lim     Limits
	path    string   // Create: the file, for rotation
	file    *os.File // Create: the current file
	size    int64    // bytes in the current file
	calls   map[string]*callCount
	updates map[string]*updateCount
	dropped int64 // events left out in all
	// secrets and mask are the registered secrets (AddSecrets).
	secrets []string
	mask    *strings.Replacer
}

// callCount is what one exec call's events have cost.
type callCount struct {
	run      api.RunContext
	recorded int
	dropped  int
}

// updateCount is one nested call's progress updates.
type updateCount struct {
	run      api.RunContext
	parent   string
	tool     string
	window   time.Time // when the current interval began
	inWindow int       // updates recorded in it
	skipped  int
	held     *api.TrajectoryEvent // the last coalesced update, recorded when the call ends
}

var _ api.Trajectory = (*Writer)(nil)

// NewWriter writes events to w, with the default per-call limits (no rotation: w is not a
// file of ours).
func NewWriter(w io.Writer) *Writer { return NewLimitedWriter(w, Limits{}) }

// NewLimitedWriter writes events to w within lim (MaxBytes and MaxFiles apply to Create only).
func NewLimitedWriter(w io.Writer, lim Limits) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 32<<10), lim: lim.withDefaults(),
		calls: map[string]*callCount{}, updates: map[string]*updateCount{}}
}

// Create opens (or creates) path for appending: a trajectory file grows across runs and
// restarts, within the default Limits. The file is created 0600: trajectories hold tool inputs.
func Create(path string) (*Writer, error) { return CreateLimited(path, Limits{}) }

// CreateLimited is Create within lim.
func CreateLimited(path string, lim Limits) (*Writer, error) {
	f, err := openLog(path)
	if err != nil {
		return nil, err
	}
	w := NewLimitedWriter(f, lim)
	w.closer, w.file, w.path = f, f, path
	if st, err := f.Stat(); err == nil {
		w.size = st.Size()
	}
	return w, nil
}

// Open is CreateLimited with the limits of a configuration (serve.trajectory).
func Open(path string, l config.TrajectoryLimits) (*Writer, error) {
	return CreateLimited(path, Limits{MaxBytes: l.MaxBytes, MaxFiles: l.MaxFiles, MaxEventsPerCall: l.MaxEventsPerCall,
		UpdateInterval: time.Duration(l.UpdateIntervalMs) * time.Millisecond})
}

func openLog(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
}

// bufs are encode buffers: an event is encoded outside the writer's lock.
var bufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Record writes one event, or counts it when a bound leaves it out.
func (w *Writer) Record(ev api.TrajectoryEvent) {
	// Decide first: a dropped event costs a map lookup, not its sanitizing and encoding.
	w.mu.Lock()
	keep, markers := w.admit(ev)
	w.mu.Unlock()
	for _, m := range markers {
		w.write(m)
	}
	if keep {
		w.write(ev)
	}
}

// admit applies the per-call bounds to ev and returns whether to write it, and the markers
// (dropped counts) to write before it. The caller holds mu.
func (w *Writer) admit(ev api.TrajectoryEvent) (bool, []api.TrajectoryEvent) {
	var markers []api.TrajectoryEvent
	switch ev.Kind {
	case api.EventControl:
		// An exec or wait ended: what the run's cells dropped so far is said before it (a wait's
		// nested calls are counted under the exec that started them).
		for id, c := range w.calls {
			if c.run == ev.Run && c.dropped > 0 {
				markers = append(markers, w.callMarker(id, c))
			}
		}
		if ev.Status != api.StatusWaiting {
			delete(w.calls, ev.CallID)
		}
		return true, markers
	case api.EventNested, api.EventUpdate, api.EventApprovalRequest, api.EventApprovalDecision:
	default:
		return true, nil
	}
	if ev.Kind == api.EventNested {
		// The nested call ended: its coalesced updates are said first.
		if u := w.updates[ev.CallID]; u != nil {
			held := u.held
			if held != nil { // recorded after all: not dropped
				u.skipped--
				w.dropped--
			}
			if u.skipped > 0 {
				markers = append(markers, w.updateMarker(ev.CallID, u))
			}
			if held != nil {
				markers = append(markers, *held)
			}
			delete(w.updates, ev.CallID)
		}
	}
	if len(w.calls) >= maxTracked || len(w.updates) >= maxTracked {
		markers = append(markers, w.flushCounts()...)
	}
	// A cell's own notes (phase, log: CallID is the exec's) are bounded where they are made; a
	// call's progress is coalesced here.
	if ev.Kind == api.EventUpdate && ev.CallID != ev.ParentCallID {
		u := w.updates[ev.CallID]
		if u == nil {
			u = &updateCount{run: ev.Run, parent: ev.ParentCallID, tool: ev.Tool}
			w.updates[ev.CallID] = u
		}
		if since := ev.Time.Sub(u.window); u.window.IsZero() || since >= w.lim.UpdateInterval || since < 0 {
			u.window, u.inWindow = ev.Time, 0
		}
		if u.inWindow >= UpdateBurst {
			u.skipped++
			w.dropped++
			u.held = nil
			if updateSize(ev) <= maxHeldUpdate {
				held := ev
				u.held = &held
			}
			return false, markers
		}
		u.inWindow++
		u.held = nil
	}
	key := ev.ParentCallID
	if key == "" {
		key = ev.CallID
	}
	c := w.calls[key]
	if c == nil {
		c = &callCount{run: ev.Run}
		w.calls[key] = c
	}
	if c.recorded >= w.lim.MaxEventsPerCall {
		c.dropped++
		w.dropped++
		return false, markers
	}
	c.recorded++
	return true, markers
}

// updateSize is roughly what an update event holds in memory.
func updateSize(ev api.TrajectoryEvent) int {
	n := len(ev.Input) + len(ev.Result)
	if b := ev.Update; b != nil {
		n += len(b.Text) + len(b.Data) + len(b.Resource) + len(b.URI) + len(b.Description)
	}
	return n
}

// flushCounts reports every pending count and forgets them all (the caller holds mu).
func (w *Writer) flushCounts() []api.TrajectoryEvent {
	var out []api.TrajectoryEvent
	for id, u := range w.updates {
		if u.skipped > 0 {
			out = append(out, w.updateMarker(id, u))
		}
	}
	for id, c := range w.calls {
		if c.dropped > 0 {
			out = append(out, w.callMarker(id, c))
		}
	}
	clear(w.updates)
	clear(w.calls)
	return out
}

func (w *Writer) callMarker(id string, c *callCount) api.TrajectoryEvent {
	m := dropMarker(c.run, id, "", c.dropped, "maxEventsPerCall",
		fmt.Sprintf("%d nested calls, approvals and updates of this exec were not recorded: more than %d (maxEventsPerCall)", c.dropped, w.lim.MaxEventsPerCall))
	c.dropped = 0
	return m
}

func (w *Writer) updateMarker(id string, u *updateCount) api.TrajectoryEvent {
	m := dropMarker(u.run, id, u.parent, u.skipped, "updateIntervalMs",
		fmt.Sprintf("%d progress updates of this call were coalesced: at most %d every %v are recorded, and the last (updateIntervalMs)", u.skipped, UpdateBurst, w.lim.UpdateInterval))
	m.Tool = u.tool
	u.skipped = 0
	return m
}

// dropMarker is the event that says what a bound left out, under the call it concerns.
func dropMarker(run api.RunContext, callID, parent string, n int, reason, msg string) api.TrajectoryEvent {
	res := `{"count":` + strconv.Itoa(n) + `,"reason":` + strconv.Quote(reason) + `,"message":` + strconv.Quote(msg) + `}`
	return api.TrajectoryEvent{Kind: api.EventDropped, Time: time.Now(), Run: run, CallID: callID, ParentCallID: parent,
		Status: "dropped", Result: json.RawMessage(res)}
}

// write sanitizes, encodes and appends one event, rotating the file first when it would pass
// MaxBytes.
func (w *Writer) write(ev api.TrajectoryEvent) {
	buf := bufs.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 64<<10 {
			buf.Reset()
			bufs.Put(buf)
		}
	}()
	buf.Reset()
	err := encode(buf, Sanitize(ev))
	b := buf.Bytes()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mask != nil {
		b = maskLine(b, w.mask, w.secrets)
	}
	if err != nil {
		w.err = err
		return
	}
	if w.err != nil && w.closer != nil {
		return // a broken file stays broken; Err says why
	}
	if w.file != nil && w.size > 0 && w.size+int64(len(b)) > w.lim.MaxBytes {
		if err := w.rotate(); err != nil {
			w.err = err
			return
		}
	}
	if _, err := w.w.Write(b); err != nil {
		w.err = err
		return
	}
	if err := w.w.Flush(); err != nil {
		w.err = err
		return
	}
	w.size += int64(len(b))
	w.n++
}

// rotate moves path to path.1 (path.1 to path.2, …, dropping the oldest beyond MaxFiles) and
// starts a new path. The caller holds mu.
func (w *Writer) rotate() error {
	if err := w.w.Flush(); err != nil {
		return err
	}
	if err := w.file.Close(); err != nil {
		return err
	}
	w.file, w.closer = nil, nil
	name := func(i int) string {
		if i == 0 {
			return w.path
		}
		return w.path + "." + strconv.Itoa(i)
	}
	_ = os.Remove(name(w.lim.MaxFiles))
	for i := w.lim.MaxFiles - 1; i >= 0; i-- {
		if err := os.Rename(name(i), name(i+1)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	f, err := openLog(w.path)
	if err != nil {
		return err
	}
	w.file, w.closer, w.size = f, f, 0
	w.w.Reset(f)
	return nil
}

// Dropped is the number of events the limits left out (each counted in an EventDropped).
func (w *Writer) Dropped() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dropped
}

// encode writes ev as one JSON line. The inputs and the result — the bulk of an event — are
// already compact, valid JSON (Value made them so): they are appended as they are instead of
// going through encoding/json, which would validate and compact them again byte by byte. HTML
// characters are not escaped: inputs are code, and `=>` should read as such.
func encode(buf *bytes.Buffer, ev api.TrajectoryEvent) error {
	raws := [...]struct {
		key string
		raw json.RawMessage
	}{{"input", ev.Input}, {"originalInput", ev.OriginalInput}, {"result", ev.Result}}
	ev.Input, ev.OriginalInput, ev.Result = nil, nil, nil
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev); err != nil {
		return err
	}
	buf.Truncate(buf.Len() - 2) // "}\n"
	for _, r := range raws {
		if len(r.raw) > 0 {
			buf.WriteString(`,"`)
			buf.WriteString(r.key)
			buf.WriteString(`":`)
			buf.Write(r.raw)
		}
	}
	buf.WriteString("}\n")
	return nil
}

// Count is the number of events written.
func (w *Writer) Count() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// Err reports the first write error, if any.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close reports what is still counted, flushes and closes the file opened by Create.
func (w *Writer) Close() error {
	w.mu.Lock()
	markers := w.flushCounts()
	w.mu.Unlock()
	for _, m := range markers {
		w.write(m)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.w.Flush()
	if w.closer != nil {
		if cerr := w.closer.Close(); err == nil {
			err = cerr
		}
		w.closer = nil
	}
	return err
}

// Multi records every event to each of ts (nil entries are skipped).
func Multi(ts ...api.Trajectory) api.Trajectory {
	var out multi
	for _, t := range ts {
		if t != nil {
			out = append(out, t)
		}
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	return out
}

type multi []api.Trajectory

func (m multi) Record(ev api.TrajectoryEvent) {
	for _, t := range m {
		t.Record(ev)
	}
}

// Func adapts a function to api.Trajectory.
type Func func(api.TrajectoryEvent)

// Record calls f.
func (f Func) Record(ev api.TrajectoryEvent) { f(ev) }
