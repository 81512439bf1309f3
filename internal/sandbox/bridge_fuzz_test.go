package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
)

// hostileHost answers every request with bytes an attacker chose: what an MCP server or a
// plugin can put in a tool result, an error message, a pending label.
type hostileHost struct {
	result []byte
	fail   bool
}

func (h *hostileHost) Sync(op string, p []byte) ([]byte, error) {
	if h.fail {
		return nil, &api.ToolError{Name: string(h.result), Message: string(h.result), Code: string(h.result)}
	}
	return h.result, nil
}

func (h *hostileHost) Async(ctx context.Context, c *Call) ([]byte, error) {
	return h.Sync(c.Op, c.Payload)
}

func (h *hostileHost) PendingLabel(op string, p []byte) string { return string(h.result) }

// FuzzBridge drives the host ↔ guest bridge with hostile input from both sides: the tool name and
// arguments a cell passes (guest text) and the bytes the host returns (a tool result). Whatever
// arrives, the run ends with completed or a failure with a reason — never a panic, never
// internal_error — and a completed value is valid JSON (G4).
func FuzzBridge(f *testing.F) {
	testEngine(f)
	for _, s := range []struct {
		name, args string
		result     []byte
		fail       bool
	}{
		{"echo", `{"x":1}`, []byte(`{"ok":true}`), false},
		{"", `null`, []byte(`null`), false},
		{"a\u0000b", `"\ud800"`, []byte("\xff\xfe"), false},
		{"x", `[1,2`, []byte(`{"a":`), false},
		{"x", `{}`, []byte(`"` + string(make([]byte, 3000)) + `"`), false},
		{"boom", `{}`, []byte("Error\x00\n<script>"), true},
		{"deep", `{}`, []byte(`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`), false},
	} {
		f.Add(s.name, s.args, s.result, s.fail)
	}
	f.Fuzz(func(t *testing.T, name, args string, result []byte, fail bool) {
		host := &hostileHost{result: result, fail: fail}
		code := `let a; try { a = JSON.parse(` + strconv.Quote(args) + `) } catch { a = ` + strconv.Quote(args) + ` }
			const out = [];
			try { out.push(await tools.callValue(` + strconv.Quote(name) + `, a)) } catch (e) { out.push(String(e && e.message)) }
			try { out.push(await tools.call(` + strconv.Quote(name) + `, a)) } catch (e) { out.push(String(e && e.code)) }
			return out`
		lim := defaultLimits()
		watchdog := time.AfterFunc(20*time.Second, func() {
			panic(fmt.Sprintf("hung: name %q args %q result %q fail %v", name, args, result, fail))
		})
		defer watchdog.Stop()
		r, o := runCell(t, host, code, lim)
		defer r.Close()
		for o.Status == StatusWaiting {
			o = r.Resume(context.Background(), lim)
		}
		switch o.Status {
		case StatusCompleted:
			if !json.Valid(o.Value) {
				t.Fatalf("completed with invalid JSON %q", o.Value)
			}
		case StatusFailed:
			if o.Code == api.CodeInternal {
				t.Fatalf("internal error: %s", o.Error)
			}
		default:
			t.Fatalf("status %q", o.Status)
		}
	})
}
