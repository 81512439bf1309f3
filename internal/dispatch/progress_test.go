package dispatch

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/codemode-go/codemode/api"
)

// issue 21 item 1: one progress stream for a run's nested calls.
func TestCombinedProgress(t *testing.T) {
	upd := func(p, total float64, msg string) api.ContentBlock {
		meta, _ := json.Marshal(map[string]float64{"progress": p, "total": total})
		return api.ContentBlock{Type: "text", Text: msg, Meta: meta}
	}
	type step struct {
		call   string
		b      *api.ContentBlock // nil: the call returns
		p, tot float64
		msg    string
	}
	b := func(c api.ContentBlock) *api.ContentBlock { return &c }
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"one call passes through", []step{
			{"a", b(upd(0, 100, "start")), 0, 100, "start"},
			{"a", b(upd(50, 100, "")), 50, 100, "50/100"},
			{"a", b(upd(100, 100, "done")), 100, 100, "done"},
			{"a", nil, 0, 0, ""}, // already full: nothing to send
		}},
		{"other scales become percent", []step{
			{"a", b(upd(3, 10, "")), 30, 100, "3/10"},
		}},
		{"two calls in parallel", []step{
			{"a", b(upd(0, 100, "")), 0, 100, "0/100"},
			{"b", b(upd(0, 4, "")), 0, 200, "0/4"},
			{"a", b(upd(50, 100, "")), 50, 200, "50/100"},
			{"b", b(upd(2, 4, "")), 100, 200, "2/4"},
			{"b", nil, 150, 200, ""},
			{"a", nil, 200, 200, ""},
		}},
		{"unknown total waits for the end", []step{
			{"a", b(upd(7, 0, "")), 0, 100, "7"},
			{"a", b(api.ContentBlock{Type: "text", Text: "still going"}), 0, 100, "still going"},
			{"a", nil, 100, 100, ""},
		}},
		{"values never go back", []step{
			{"a", b(upd(80, 100, "")), 80, 100, "80/100"},
			{"a", b(upd(20, 100, "")), 80, 100, "20/100"},
			{"a", b(upd(500, 100, "")), 100, 100, "500/100"},
		}},
		{"non-text update", []step{
			{"a", b(api.ContentBlock{Type: "image", Data: "x"}), 0, 100, "[image]"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c combined
			for i, s := range tc.steps {
				if s.b == nil {
					p, tot, moved := c.finish(s.call)
					if moved != (s.tot != 0) || moved && (p != s.p || tot != s.tot) {
						t.Fatalf("step %d finish: %g/%g moved=%v, want %g/%g", i, p, tot, moved, s.p, s.tot)
					}
					continue
				}
				p, tot, msg := c.report(s.call, *s.b)
				if p != s.p || tot != s.tot || msg != s.msg {
					t.Fatalf("step %d: %g/%g %q, want %g/%g %q", i, p, tot, msg, s.p, s.tot, s.msg)
				}
			}
		})
	}
}

func TestCombinedProgressBounds(t *testing.T) {
	var c combined
	for i := range maxParts + 10 {
		meta, _ := json.Marshal(map[string]float64{"progress": 1, "total": 1})
		c.report(fmt.Sprint(i), api.ContentBlock{Type: "text", Meta: meta})
	}
	if len(c.parts) != maxParts {
		t.Fatalf("%d parts tracked, want the bound %d", len(c.parts), maxParts)
	}
	for _, meta := range []string{`{"progress":"x"}`, `{"total":5}`, `not json`, ``} {
		if _, _, ok := progressMeta(json.RawMessage(meta)); ok {
			t.Errorf("progressMeta(%s) accepted", meta)
		}
	}
	if p, _, _ := c.report("x", api.ContentBlock{Meta: json.RawMessage(`{"progress":1e308,"total":1e-308}`)}); math.IsInf(p, 0) || math.IsNaN(p) {
		t.Errorf("extreme values made %g", p)
	}
}
