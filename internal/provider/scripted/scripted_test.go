package scripted

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// recTB records Errorf instead of failing, to test the server's own failure reports.
type recTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recTB) errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

func post(t *testing.T, url, body string, h map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

var antHeaders = map[string]string{"anthropic-version": "2023-06-01"}

// TestValidation: requests the real APIs reject get their 400 and fail the test (here: are
// recorded), with the API's own wording.
func TestValidation(t *testing.T) {
	cases := []struct {
		provider, body, says string
	}{
		{OpenAI, `{"messages":[{"role":"user","content":"hi"}]}`, "model parameter"},
		{OpenAI, `{"model":"m","messages":[]}`, "at least one message"},
		{OpenAI, `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true}}`, "only allowed when 'stream' is enabled"},
		{OpenAI, `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"exec","arguments":"{}"}}]},{"role":"user","content":"next"}]}`, "did not have response messages: a"},
		{OpenAI, `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"x","content":"r"}]}`, "must be a response to a preceeding message"},
		{OpenAI, `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"bad name"}}]}`, "does not match pattern"},
		{OpenAI, `{"model":"m","messages":[{"role":"wizard","content":"hi"}]}`, "Invalid value for 'messages[0].role'"},
		{Anthropic, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "max_tokens: Field required"},
		{Anthropic, `{"model":"m","max_tokens":10,"messages":[{"role":"assistant","content":"hi"}]}`, "first message must use the"},
		{Anthropic, `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`, "text content blocks must be non-empty"},
		{Anthropic, `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"exec","input":{}}]},{"role":"user","content":"no result"}]}`, "without `tool_result` blocks"},
		{Anthropic, `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"zz","content":"r"}]}]}`, "unexpected `tool_use_id`"},
		{Anthropic, `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"exec","input_schema":{"type":"string"}}]}`, "input_schema"},
		{Anthropic, `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"exec","input":"x"}]}]}`, "object input"},
	}
	for _, c := range cases {
		t.Run(c.provider+"/"+c.says, func(t *testing.T) {
			rec := &recTB{TB: t}
			srv := Start(rec, Options{}, Say("never"))
			h := map[string]string{}
			if c.provider == Anthropic {
				h = antHeaders
			}
			res, body := post(t, srv.URL+map[string]string{OpenAI: "/v1/chat/completions", Anthropic: "/v1/messages"}[c.provider], c.body, h)
			if res.StatusCode != 400 || !strings.Contains(body, c.says) {
				t.Errorf("status %d body %s", res.StatusCode, body)
			}
			if errs := rec.errors(); len(errs) != 1 || !strings.Contains(errs[0], "would be rejected by the real API") {
				t.Errorf("test errors = %q", errs)
			}
			if srv.Remaining() != 1 {
				t.Errorf("a rejected request used a turn")
			}
		})
	}
}

// TestScriptExhausted: a request past the script is a 500 a client will not retry
// (x-should-retry: false), and a test failure that says so.
func TestScriptExhausted(t *testing.T) {
	rec := &recTB{TB: t}
	srv := Start(rec, Options{}, Say("one"))
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	if res, _ := post(t, srv.OpenAIBaseURL()+"/chat/completions", body, nil); res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	res, out := post(t, srv.OpenAIBaseURL()+"/chat/completions", body, nil)
	if res.StatusCode != 500 || res.Header.Get("X-Should-Retry") != "false" || !strings.Contains(out, "no turn for request 2") {
		t.Errorf("status %d headers %v body %s", res.StatusCode, res.Header, out)
	}
	if errs := rec.errors(); len(errs) != 1 || !strings.Contains(errs[0], "script has only 1 turns") {
		t.Errorf("test errors = %q", errs)
	}
	if srv.Count() != 2 || len(srv.Requests()) != 2 {
		t.Errorf("count %d requests %d", srv.Count(), len(srv.Requests()))
	}
}

func TestUnknownPathAndAuth(t *testing.T) {
	srv := Start(t, Options{APIKey: "k"}, Say("a"), Say("b"))
	if res, body := post(t, srv.URL+"/v1/completions", `{}`, nil); res.StatusCode != 404 || !strings.Contains(body, "Invalid URL") {
		t.Errorf("status %d body %s", res.StatusCode, body)
	}
	ok := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	if res, body := post(t, srv.URL+"/v1/chat/completions", ok, map[string]string{"Authorization": "Bearer nope"}); res.StatusCode != 401 || !strings.Contains(body, "invalid_api_key") {
		t.Errorf("status %d body %s", res.StatusCode, body)
	}
	if res, _ := post(t, srv.URL+"/v1/chat/completions", ok, map[string]string{"Authorization": "Bearer k"}); res.StatusCode != 200 {
		t.Errorf("status %d", res.StatusCode)
	}
	ant := `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`
	if res, body := post(t, srv.URL+"/v1/messages", ant, map[string]string{"x-api-key": "k"}); res.StatusCode != 400 || !strings.Contains(body, "anthropic-version") {
		t.Errorf("status %d body %s", res.StatusCode, body)
	}
	if res, _ := post(t, srv.URL+"/v1/messages", ant, map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"}); res.StatusCode != 200 {
		t.Errorf("status %d", res.StatusCode)
	}
}

// TestStreams checks the SSE framing byte-level: OpenAI data-only chunks ending in [DONE] with a
// usage chunk when asked; Anthropic named events from message_start to message_stop.
func TestStreams(t *testing.T) {
	srv := New(t, Fixed(Reply{Text: "hello world, a longer text", ToolCalls: []ToolCall{{Name: "exec", Arguments: `{"code":"1"}`}}}),
		Fixed(Reply{Text: "hello world, a longer text", ToolCalls: []ToolCall{{Name: "exec", Arguments: `{"code":"1"}`}}}))
	res, body := post(t, srv.URL+"/v1/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`, nil)
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content type %q", ct)
	}
	var text, args strings.Builder
	var finish string
	var usage bool
	events := sse(body)
	if events[len(events)-1].data != "[DONE]" {
		t.Errorf("last event %+v", events[len(events)-1])
	}
	for _, e := range events[:len(events)-1] {
		var c struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						ID       string `json:"id"`
						Function struct {
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				TotalTokens int `json:"total_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(e.data), &c); err != nil || e.name != "" {
			t.Fatalf("event %+v: %v", e, err)
		}
		if c.Usage != nil && c.Usage.TotalTokens > 0 {
			usage = true
		}
		for _, ch := range c.Choices {
			text.WriteString(ch.Delta.Content)
			for _, tc := range ch.Delta.ToolCalls {
				args.WriteString(tc.Function.Arguments)
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	if text.String() != "hello world, a longer text" || args.String() != `{"code":"1"}` || finish != "tool_calls" || !usage {
		t.Errorf("openai stream: text %q args %q finish %q usage %v", text.String(), args.String(), finish, usage)
	}

	_, body = post(t, srv.URL+"/v1/messages", `{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, antHeaders)
	var names []string
	for _, e := range sse(body) {
		var d struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(e.data), &d); err != nil || d.Type != e.name {
			t.Fatalf("event %+v: %v", e, err)
		}
		names = append(names, e.name)
	}
	if names[0] != "message_start" || names[len(names)-1] != "message_stop" || names[len(names)-2] != "message_delta" {
		t.Errorf("anthropic events %v", names)
	}
}

type event struct{ name, data string }

func sse(body string) []event {
	var out []event
	var cur event
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			out = append(out, cur)
			cur = event{}
		case strings.HasPrefix(line, "event: "):
			cur.name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			cur.data += line[len("data: "):]
		}
	}
	return out
}

// TestDelayHonoursCancel: a delayed reply does not hold Close hostage once the client is gone.
func TestDelayHonoursCancel(t *testing.T) {
	srv := New(t, Fixed(Reply{Text: "late", Delay: time.Hour}))
	c := &http.Client{Timeout: 100 * time.Millisecond}
	_, err := c.Post(srv.OpenAIBaseURL()+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err == nil {
		t.Fatal("no timeout")
	}
	done := make(chan struct{})
	go func() { srv.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second): // generous: proves Close does not wait an hour
		t.Fatal("Close waited for the delayed reply")
	}
}

func FuzzParse(f *testing.F) {
	f.Add(`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"x","arguments":"{}"}}]},{"role":"tool","tool_call_id":"a","content":[{"type":"text","text":"r"}]}]}`)
	f.Add(`{"model":"m","max_tokens":1,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"q","content":[{"type":"text","text":""}]}]}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		var r1, r2 Request
		_ = parseOpenAI([]byte(body), &r1)
		_ = parseAnthropic([]byte(body), &r2)
	})
}
