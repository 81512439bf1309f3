package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemode-go/codemode/internal/provider/scripted"
)

// a10 is the check a code-mode run installs (A10): exactly one exec, one wait, and only
// approved direct-only tools.
func a10(direct ...string) func([]string) error {
	return func(names []string) error {
		count := map[string]int{}
		for _, n := range names {
			count[n]++
			if n != "exec" && n != "wait" && !slices.Contains(direct, n) {
				return fmt.Errorf("tool %q is not exec, wait or an approved direct-only tool", n)
			}
		}
		if count["exec"] != 1 || count["wait"] != 1 {
			return fmt.Errorf("the payload must contain exactly one exec and one wait, found %v", names)
		}
		return nil
	}
}

// TestA10PayloadCheck: a tool in the request beyond the approved surface aborts the call before
// any byte reaches the server (A10).
func TestA10PayloadCheck(t *testing.T) {
	cases := []struct {
		name  string
		tools []ToolDef
		ok    bool
	}{
		{"surface", surface, true},
		{"surface plus direct-only", append(slices.Clone(surface), ToolDef{Name: "computer"}), true},
		{"sneaked tool", append(slices.Clone(surface), ToolDef{Name: "read_file"}), false},
		{"exec twice under another case", []ToolDef{surface[0], surface[1], {Name: "Exec"}}, false},
		{"wait missing", surface[:1], false},
		{"no tools", nil, false},
	}
	for _, v := range variants {
		for _, tc := range cases {
			t.Run(v.String()+"/"+tc.name, func(t *testing.T) {
				srv := scripted.New(t)
				if tc.ok {
					srv.Add(scripted.Say("ok"))
				}
				var checks atomic.Int32
				c := newClient(t, srv, v, func(o *Options) {
					o.MaxRetries = 5
					check := a10("computer")
					o.CheckPayload = func(names []string) error { checks.Add(1); return check(names) }
				})
				_, err := c.Complete(context.Background(), Request{Model: "m", Tools: tc.tools, Messages: []Message{{Role: RoleUser, Text: "hi"}}})
				if tc.ok {
					if err != nil {
						t.Fatal(err)
					}
					return
				}
				var pe *Error
				if !errors.As(err, &pe) || pe.Kind != KindPayloadRejected || pe.Attempts != 0 || pe.Retryable {
					t.Fatalf("err = %#v (%v)", err, err)
				}
				if !strings.Contains(err.Error(), "refused before sending") || !strings.Contains(err.Error(), "nothing was sent") {
					t.Errorf("message = %q", err)
				}
				if n := srv.Count(); n != 0 {
					t.Errorf("the server received %d requests", n)
				}
				if n := checks.Load(); n != 1 {
					t.Errorf("CheckPayload ran %d times; a refusal must not be retried", n)
				}
			})
		}
	}
}

// TestA10ChecksTheSerializedBody: a tool added to the JSON body after rendering (here by an edit
// of the rendered bytes, as any later layer could) is caught, because the check reads the bytes
// about to be sent rather than Request.Tools.
func TestA10ChecksTheSerializedBody(t *testing.T) {
	sneaky := []map[string]any{
		{"type": "function", "function": map[string]any{"name": "exec", "parameters": map[string]any{"type": "object"}}},
		{"type": "function", "function": map[string]any{"name": "wait", "parameters": map[string]any{"type": "object"}}},
		{"type": "function", "function": map[string]any{"name": "delete_everything", "parameters": map[string]any{"type": "object"}}},
	}
	sneakyAnthropic := []map[string]any{
		{"name": "exec", "input_schema": map[string]any{"type": "object"}},
		{"name": "wait", "input_schema": map[string]any{"type": "object"}},
		{"name": "delete_everything", "input_schema": map[string]any{"type": "object"}},
	}
	for _, v := range variants {
		t.Run(v.String(), func(t *testing.T) {
			srv := scripted.New(t)
			c := newClient(t, srv, v, func(o *Options) { o.CheckPayload = a10() })
			req := Request{Model: "m", Tools: surface, Messages: []Message{{Role: RoleUser, Text: "hi"}}}
			setTools := func(tools any) func([]byte) []byte {
				return func(body []byte) []byte {
					var m map[string]any
					if err := json.Unmarshal(body, &m); err != nil {
						t.Fatal(err)
					}
					m["tools"] = tools
					out, err := json.Marshal(m)
					if err != nil {
						t.Fatal(err)
					}
					return out
				}
			}
			var err error
			switch cl := c.(type) {
			case *openaiClient:
				_, err = cl.complete(context.Background(), req, setTools(sneaky))
			case *anthropicClient:
				_, err = cl.complete(context.Background(), req, setTools(sneakyAnthropic))
			}
			var pe *Error
			if !errors.As(err, &pe) || pe.Kind != KindPayloadRejected || !strings.Contains(err.Error(), "delete_everything") {
				t.Fatalf("err = %v", err)
			}
			if srv.Count() != 0 {
				t.Fatalf("the server received %d requests", srv.Count())
			}
		})
	}
}

// TestA10OnEveryAttempt: retried attempts are checked too, and see the same names.
func TestA10OnEveryAttempt(t *testing.T) {
	for _, v := range variants {
		t.Run(v.String(), func(t *testing.T) {
			srv := scripted.New(t,
				scripted.Fixed(scripted.Reply{Status: 429, Header: map[string][]string{"Retry-After-Ms": {"1"}}}),
				scripted.Say("ok"))
			var seen [][]string
			c := newClient(t, srv, v, func(o *Options) {
				o.CheckPayload = func(names []string) error { seen = append(seen, names); return nil }
			})
			if _, err := c.Complete(context.Background(), Request{Model: "m", Tools: surface, Messages: []Message{{Role: RoleUser, Text: "hi"}}}); err != nil {
				t.Fatal(err)
			}
			if len(seen) != 2 || !slices.Equal(seen[0], []string{"exec", "wait"}) || !slices.Equal(seen[1], seen[0]) {
				t.Fatalf("CheckPayload saw %v", seen)
			}
		})
	}
}

func TestToolNames(t *testing.T) {
	cases := []struct {
		body string
		want []string
		err  bool
	}{
		{`{"model":"m"}`, []string{}, false},
		{`{"tools":[{"type":"function","function":{"name":"exec"}},{"type":"function","function":{"name":"wait"}}]}`, []string{"exec", "wait"}, false},
		{`{"tools":[{"name":"exec","input_schema":{}},{"name":"wait"}]}`, []string{"exec", "wait"}, false},
		{`{"tools":[{"type":"custom","custom":{"name":"grammar"}}]}`, []string{"grammar"}, false},
		{`{"tools":[{"type":"web_search"}]}`, []string{""}, false},
		// Parsers disagree on duplicated keys, so they are refused.
		{`{"tools":[{"name":"exec"}],"tools":[{"name":"evil"}]}`, nil, true},
		{`{"tools":[{"function":{"name":"exec","name":"evil"}}]}`, nil, true},
		{`{"tools":[{"function":{"name":"exec"},"function":{"name":"evil"}}]}`, nil, true},
		{`{"messages":[{"a":1,"a":2}],"tools":[]}`, []string{}, false},
		{`{"tools":null}`, []string{}, false},
		{`{"tools":[{"name":5}]}`, []string{""}, false},
		{`{"tools":[{"function":"exec"}]}`, nil, true},
		{`{"tools":[]} trailing`, nil, true},
		{`{"tools":[{"name":"\u0065xec"}]}`, []string{"exec"}, false},
		{`{"tools":{"name":"exec"}}`, nil, true},
		{`{"tools":[1]}`, nil, true},
		{`not json`, nil, true},
	}
	for _, tc := range cases {
		got, err := toolNames([]byte(tc.body))
		if (err != nil) != tc.err || !tc.err && !slices.Equal(got, tc.want) {
			t.Errorf("toolNames(%s) = %q, %v; want %q", tc.body, got, err, tc.want)
		}
	}
}

// TestPayloadRefusalIsFast: no retry backoff for a refusal even with many retries allowed.
func TestPayloadRefusalIsFast(t *testing.T) {
	srv := scripted.New(t)
	c := newClient(t, srv, variant{OpenAI, false}, func(o *Options) {
		o.MaxRetries = 10
		o.CheckPayload = func([]string) error { return errors.New("no") }
	})
	start := time.Now()
	_, err := c.Complete(context.Background(), Request{Model: "m", Messages: []Message{{Role: RoleUser, Text: "hi"}}})
	if err == nil {
		t.Fatal("no error")
	}
	// Generous bound: ten backoffs would take many seconds.
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("refusal took %v", d)
	}
}
