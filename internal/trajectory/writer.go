package trajectory

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/codemode-go/codemode/api"
)

// Writer appends events to an io.Writer as JSON Lines, one sanitized event per line. It is safe
// for concurrent use; each event is flushed as it is written, so a crash loses nothing that was
// recorded. Write errors are kept (Err) rather than returned: recording must never fail a call.
type Writer struct {
	mu     sync.Mutex
	w      *bufio.Writer
	closer io.Closer
	err    error
	n      int64
	// secrets and mask are the registered secrets (AddSecrets).
	secrets []string
	mask    *strings.Replacer
}

var _ api.Trajectory = (*Writer)(nil)

// NewWriter writes events to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: bufio.NewWriterSize(w, 32<<10)} }

// Create opens (or creates) path for appending: a trajectory file grows across runs and
// restarts. The file is created 0600: trajectories hold tool inputs.
func Create(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	w := NewWriter(f)
	w.closer = f
	return w, nil
}

// bufs are encode buffers: an event is encoded outside the writer's lock.
var bufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Record writes one event.
func (w *Writer) Record(ev api.TrajectoryEvent) {
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
	if _, err := w.w.Write(b); err != nil {
		w.err = err
		return
	}
	if err := w.w.Flush(); err != nil {
		w.err = err
		return
	}
	w.n++
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

// Close flushes and closes the file opened by Create.
func (w *Writer) Close() error {
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
