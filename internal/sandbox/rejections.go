package sandbox

import (
	"fmt"
	"strings"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/quickjs"
)

// A cell that forgets `await` must not lose the failure of what it started either: a nested call
// that fails, or an async function that throws, with nobody listening. Like Node.js, the run
// tracks promises rejected with no handler; like Node.js's warning (not its crash), the ones
// still unhandled when the cell completes are reported as output entries, and the cell still
// completes with its value.

// maxTrackedRejections bounds the rejections a run remembers; maxReportedRejections the ones
// reported.
const (
	maxTrackedRejections  = 16
	maxReportedRejections = 5
)

// rejection is a rejected promise nobody handled yet; both values are owned references (the
// promise is kept alive so its address cannot be reused by another promise).
type rejection struct{ promise, reason quickjs.Value }

// onRejection is the VM's rejection tracker: it runs inside guest execution.
func (r *Run) onRejection(vm *quickjs.VM, promise, reason quickjs.Value, handled bool) {
	if handled {
		for i, u := range r.unhandled {
			if u.promise == promise {
				vm.Free(u.promise)
				vm.Free(u.reason)
				r.unhandled = append(r.unhandled[:i], r.unhandled[i+1:]...)
				return
			}
		}
		return
	}
	if promise == r.main {
		return // the cell's own failure is its result
	}
	if len(r.unhandled) >= maxTrackedRejections {
		r.unhandledDropped++
		return
	}
	r.unhandled = append(r.unhandled, rejection{vm.Dup(promise), vm.Dup(reason)})
}

// reportUnhandled adds an output entry per rejection still unhandled, as far as maxOutputBytes
// allows: a diagnostic never fails the cell.
func (r *Run) reportUnhandled(vm *quickjs.VM) {
	if len(r.unhandled) == 0 {
		return
	}
	more := r.unhandledDropped
	for i, u := range r.unhandled {
		if i >= maxReportedRejections {
			more += len(r.unhandled) - i
			break
		}
		msg := strings.TrimPrefix(r.describe(vm, u.reason), "Uncaught ")
		r.addNote("Unhandled promise rejection (a promise failed and nothing awaited or caught it): " + msg)
	}
	if more > 0 {
		r.addNote(fmt.Sprintf("… and %d more unhandled promise rejections", more))
	}
	r.unhandled, r.unhandledDropped = nil, 0
}

func (r *Run) addNote(text string) {
	cost := jsonCost(text, true) + OutputEntryOverhead
	if r.outBytes+cost > r.maxOut || r.out.entries >= MaxOutputEntries {
		return
	}
	r.outBytes += cost
	r.out.entries++
	r.output = append(r.output, api.Output{Type: "text", Text: text})
}
