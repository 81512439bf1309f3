package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/quickjs"
)

// What one result's output may hold (issue 22 items 2–3, issue 18 item 3). docs/semantics.md
// §11 and §23 say the same in prose; the rule is:
//
//   - Every entry costs its JSON-encoded size plus OutputEntryOverhead, so a million empty
//     text(”) calls cost as much as their response would; a result holds at most
//     MaxOutputEntries entries.
//   - text() and json() entries may use maxOutputBytes minus the room kept for the final value
//     (ValueReserve, until the body has returned); an entry that does not fit throws a RangeError
//     and fails the run (output_limit_exceeded): their output is the cell's answer, and a silently
//     shortened answer would be wrong.
//   - console.* entries share the same budget but also a console cap (MaxConsoleBytes, at most
//     half of maxOutputBytes); what does not fit is dropped, and one marker entry says how many
//     lines were dropped. The console never fails a cell.
//   - The final value takes what is left; a value that does not fit becomes a bounded reference
//     (the host keeps it whole, see ValueSpiller) instead of a failure.
//
// The budget is per result: each wait starts again (with the body's value, once returned,
// already counted). So a result's output and value never exceed maxOutputBytes as encoded JSON.
const (
	// OutputEntryOverhead is what an entry costs beyond its text: its JSON envelope
	// ({"type":"text","text":""} is 25 bytes) and separator, rounded up.
	OutputEntryOverhead = 32
	// MaxOutputEntries bounds the entries of one result, whatever their size.
	MaxOutputEntries = 10000
	// ValueReserve is the part of maxOutputBytes (at most a quarter of it) that text, json and
	// the console leave to the final value, so that a reference to an oversized value always
	// fits.
	ValueReserve = 256
	// MaxConsoleBytes caps console output per result (and never more than half of
	// maxOutputBytes).
	MaxConsoleBytes = 16 << 10
	// consoleMarkerRoom is kept free in the console cap for the marker entry.
	consoleMarkerRoom = 160
)

// outputState is one result's output accounting (VM-goroutine state, reset by each drive).
type outputState struct {
	entries       int
	console       int // bytes of console entries
	dropped       int // console lines dropped
	markerAt      int // index of the console marker in Run.output, -1 when none
	consoleCapped bool
}

func (o *outputState) reset() { *o = outputState{markerAt: -1} }

// reserve is the room text, json and the console must leave for the final value.
func (r *Run) reserve() int {
	if r.bodyDone {
		return 0 // the value is already counted
	}
	return min(ValueReserve, r.maxOut/4)
}

// hostOut implements text(), json() and console.*: out(kind, text).
func (r *Run) hostOut(vm *quickjs.VM, _ quickjs.Value, args []quickjs.Value) (quickjs.Value, error) {
	if len(args) < 2 {
		return quickjs.Undefined, nil
	}
	kind, err := vm.ToString(args[0], 16)
	if err != nil {
		return quickjs.Undefined, err
	}
	switch kind {
	case "console":
		if err := r.consoleOut(vm, args[1]); err != nil {
			return quickjs.Undefined, err
		}
		return boolValue(r.out.consoleCapped), nil
	case "console-drop":
		// The guest skipped formatting a line because the console was full: count it, or say
		// the budget is fresh again (a new result) so that the guest sends it.
		if !r.out.consoleCapped {
			return quickjs.False, nil
		}
		r.out.dropped++
		return quickjs.True, nil
	}
	if r.out.entries >= MaxOutputEntries {
		return quickjs.Undefined, r.outputExceeded(fmt.Sprintf("output limit exceeded: a result holds at most %d output entries", MaxOutputEntries))
	}
	avail := r.maxOut - r.reserve() - r.outBytes - OutputEntryOverhead
	text, err := vm.ToString(args[1], max(avail, 0))
	if err != nil {
		var tl *quickjs.TooLongError
		if errors.As(err, &tl) {
			return quickjs.Undefined, r.entryExceeded(tl.Len)
		}
		return quickjs.Undefined, err
	}
	cost := jsonCost(text, kind != "json") + OutputEntryOverhead
	if cost > r.maxOut-r.reserve()-r.outBytes {
		return quickjs.Undefined, r.entryExceeded(cost - OutputEntryOverhead)
	}
	r.outBytes += cost
	r.out.entries++
	switch kind {
	case "json":
		r.output = append(r.output, api.Output{Type: "json", Value: json.RawMessage(text)})
	default:
		r.output = append(r.output, api.Output{Type: "text", Text: text})
	}
	return quickjs.Undefined, nil
}

func (r *Run) entryExceeded(n int) error {
	return r.outputExceeded(fmt.Sprintf("output limit exceeded: an output entry of %d bytes does not fit in maxOutputBytes (%d; %d used, %d kept for the return value)",
		n, r.maxOut, r.outBytes, r.reserve()))
}

func (r *Run) outputExceeded(msg string) error {
	r.abortCode = api.CodeOutputLimit
	r.abortMsg = msg
	return &api.ToolError{Name: "RangeError", Message: r.abortMsg, Code: string(api.CodeOutputLimit)}
}

// consoleOut appends a console line if it fits the console cap and the shared budget; otherwise
// the line is dropped and counted by the marker. It never fails.
func (r *Run) consoleOut(vm *quickjs.VM, v quickjs.Value) error {
	o := &r.out
	room := -1
	if !o.consoleCapped && o.entries < MaxOutputEntries-1 {
		capBytes := min(MaxConsoleBytes, r.maxOut/2)
		room = min(capBytes-o.console, r.maxOut-r.reserve()-r.outBytes) - consoleMarkerRoom - OutputEntryOverhead
	}
	text, total, err := vm.ToStringPrefix(v, max(room, 0))
	if err != nil {
		return err
	}
	cost := jsonCost(text, true) + OutputEntryOverhead
	if room < 0 || total > len(text) || cost-OutputEntryOverhead > room {
		r.dropConsole()
		return nil
	}
	r.outBytes += cost
	o.console += cost
	o.entries++
	r.output = append(r.output, api.Output{Type: "text", Text: text})
	return nil
}

func boolValue(b bool) quickjs.Value {
	if b {
		return quickjs.True
	}
	return quickjs.False
}

// dropConsole counts a dropped console line; the first drop adds the marker (its room was kept
// in both budgets) and caps the console for the rest of the result.
func (r *Run) dropConsole() {
	o := &r.out
	o.dropped++
	if o.markerAt < 0 {
		o.consoleCapped = true
		o.markerAt = len(r.output)
		r.output = append(r.output, api.Output{Type: "text"})
		o.entries++
		r.outBytes += consoleMarkerRoom
		o.console += consoleMarkerRoom
	}
}

// consoleMarker is the text of the marker entry (at most consoleMarkerRoom − the overhead).
func consoleMarker(lines int) string {
	return fmt.Sprintf("[console output truncated: %d more console lines were dropped; use text() or json() for output that matters]", lines)
}

// takeOutput hands the result its output, completing the console marker.
func (r *Run) takeOutput() []api.Output {
	if r.out.markerAt >= 0 && r.out.markerAt < len(r.output) {
		r.output[r.out.markerAt].Text = consoleMarker(r.out.dropped)
	}
	o := r.output
	r.output = nil
	r.out.markerAt = -1
	return o
}

// jsonCost is the size of text once encoding/json writes it in a result: as a JSON string
// (quoted and escaped) when isString, else as the JSON value it is (HTML characters and line
// separators escaped, as json.Marshal does).
func jsonCost(text string, isString bool) int {
	n := len(text)
	if isString {
		n += 2
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '<' || c == '>' || c == '&':
				n += 5 // \u003c
			case !isString:
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
				n++
			case c < 0x20:
				n += 5
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 5 // an invalid byte (a lone surrogate's, say) becomes \ufffd
		case r == '\u2028' || r == '\u2029':
			n += 3
		}
		i += size
	}
	return n
}
