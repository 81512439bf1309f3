package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
)

func req(tool, input string) api.ApprovalRequest {
	return api.ApprovalRequest{CallID: "c/1", Tool: tool, Input: json.RawMessage(input), Prompt: "Allow " + tool + "?"}
}

func TestPolicyApprover(t *testing.T) { // issue 11: --approve none|all|readonly
	cases := []struct {
		mode     string
		readOnly bool
		approve  bool
		reason   string
	}{
		{ApproveAll, false, true, ""},
		{ApproveNone, true, false, "refused in this run"},
		{ApproveReadOnly, true, true, "read-only"},
		{ApproveReadOnly, false, false, "only read-only tools"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/readOnly=%v", c.mode, c.readOnly), func(t *testing.T) {
			a, err := PolicyApprover(c.mode)
			if err != nil {
				t.Fatal(err)
			}
			r := req("native:app:write", `{}`)
			r.ReadOnly = c.readOnly
			d, err := a.Ask(context.Background(), r)
			if err != nil || d.Approve != c.approve || d.By != "--approve "+c.mode || !strings.Contains(d.Reason, c.reason) {
				t.Fatalf("%+v %v", d, err)
			}
		})
	}
	if _, err := PolicyApprover("sometimes"); err == nil || !strings.Contains(err.Error(), "ask, none, all or readonly") {
		t.Fatalf("%v", err)
	}
}

func TestTerminal(t *testing.T) { // issue 11: y, n, always, anything else, closed input
	type ask struct {
		tool    string
		approve bool
		by      string
	}
	cases := []struct {
		name, in string
		asks     []ask
		out      []string // substrings of what the person saw
	}{
		{"yes and no", "y\nno\n", []ask{{"w", true, "terminal"}, {"w", false, "terminal"}}, []string{"? approval needed: w {\"path\":\"x\"}\n  Allow w?\n  approve? [y]es / [n]o / [a]lways for w in this run: y\n"}},
		{"always is per tool", "a\nn\n", []ask{{"w", true, "terminal (always for this run)"}, {"w", true, "terminal (always for this run)"}, {"r", false, "terminal"}}, nil},
		{"anything else rejects", "maybe\n", []ask{{"w", false, "terminal"}}, []string{"maybe"}},
		{"closed input rejects", "", []ask{{"w", false, "terminal"}, {"w", false, "terminal"}}, []string{"(no answer: input closed)"}},
		{"answers are trimmed and case-insensitive", "  YES \n", []ask{{"w", true, "terminal"}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			term := NewTerminal(strings.NewReader(c.in), &out)
			term.Echo = true
			for i, a := range c.asks {
				d, err := term.Ask(context.Background(), req(a.tool, `{"path":"x"}`))
				if err != nil || d.Approve != a.approve || d.By != a.by {
					t.Fatalf("ask %d: %+v %v", i, d, err)
				}
			}
			if !contains(out.String(), c.out...) {
				t.Fatalf("the person saw:\n%s", out.String())
			}
		})
	}
}

// TestTerminalCancelled: a question nobody answers ends with the context, and the answer typed
// later goes to the next question, not to the expired one.
func TestTerminalCancelled(t *testing.T) {
	pr, pw := io.Pipe()
	var out syncBuffer
	term := NewTerminal(pr, &out)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := term.Ask(ctx, req("w", `{}`)); err == nil {
		t.Fatal("an unanswered question did not end with its context")
	}
	go fmt.Fprintln(pw, "y")
	d, err := term.Ask(context.Background(), req("w", `{}`))
	if err != nil || !d.Approve {
		t.Fatalf("%+v %v", d, err)
	}
	pw.Close()
	if !strings.Contains(out.String(), "(no answer in time)") {
		t.Fatalf("%s", out.String())
	}
}

// TestTerminalHammer: many calls ask at once; each question gets exactly one answer, questions
// never interleave, and the reader goroutine ends with the input.
func TestTerminalHammer(t *testing.T) {
	before := runtime.NumGoroutine()
	const n = 64
	var in strings.Builder
	for i := 0; i < n; i++ {
		in.WriteString([]string{"y\n", "n\n"}[i%2])
	}
	var out syncBuffer
	term := NewTerminal(strings.NewReader(in.String()), &out)
	var wg sync.WaitGroup
	var mu sync.Mutex
	approved := 0
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			d, err := term.Ask(context.Background(), req(fmt.Sprintf("t%d", i), `{}`))
			if err != nil {
				t.Error(err)
			}
			if d.Approve {
				mu.Lock()
				approved++
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	if approved != n/2 || strings.Count(out.String(), "? approval needed") != n {
		t.Fatalf("%d approved, %d questions", approved, strings.Count(out.String(), "? approval needed"))
	}
	// One more question reads the end of the input; then the reader is gone.
	if d, _ := term.Ask(context.Background(), req("t", `{}`)); d.Approve {
		t.Fatal("approved after the input ended")
	}
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("goroutines: %d before, %d after", before, runtime.NumGoroutine())
		}
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
