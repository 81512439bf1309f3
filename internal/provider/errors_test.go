package provider

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/codemode-go/codemode/internal/provider/scripted"
)

var hi = Request{Model: "test-model", Tools: surface, Messages: []Message{{Role: RoleUser, Text: "hi"}}}

func ms(n string) http.Header { return http.Header{"Retry-After-Ms": {n}} }

// TestErrors drives every failure class through both providers (JSON and SSE) and checks the
// kind, the status, the retries the scripted server observed, and that the message says what
// to do. Retry waits are kept short with retry-after-ms, which the transport honours.
func TestErrors(t *testing.T) {
	type tc struct {
		name     string
		opts     func(*Options)
		turns    []scripted.Turn
		server   scripted.Options
		kind     Kind
		status   int
		requests int // requests the server must have received
		retry    bool
		says     []string
	}
	cases := []tc{
		{name: "401 wrong key", server: scripted.Options{APIKey: "the-right-key"},
			kind: KindAuth, status: 401, requests: 1, says: []string{"API key was rejected", "check the key in"}},
		{name: "401 no key", server: scripted.Options{APIKey: "the-right-key"}, opts: func(o *Options) { o.APIKey = ""; o.APIKeyVar = "MY_KEY" },
			kind: KindAuth, status: 401, requests: 1, says: []string{"no API key was given: set MY_KEY"}},
		{name: "403", turns: []scripted.Turn{scripted.Fail(403, "not allowed")},
			kind: KindAuth, status: 403, requests: 1, says: []string{"not allowed", `may use model "test-model"`}},
		{name: "404 model", turns: []scripted.Turn{scripted.Fail(404, "The model `test-model` does not exist")},
			kind: KindNotFound, status: 404, requests: 1, says: []string{"does not exist", `check the model name "test-model" and the base URL`}},
		{name: "404 base URL", opts: func(o *Options) { o.BaseURL += "/nope" },
			kind: KindNotFound, status: 404, requests: 1, says: []string{"Invalid URL", "/nope"}},
		{name: "404 html page", turns: []scripted.Turn{scripted.Fixed(scripted.Reply{Status: 404, ContentType: "text/html",
			Body: "<html><body><h1>404 Not Found</h1>\x1b[31mnginx</body></html>"})},
			kind: KindNotFound, status: 404, requests: 1, says: []string{"404 Not Found [31mnginx", "base URL"}},
		{name: "400", turns: []scripted.Turn{scripted.Fail(400, "messages: bad")},
			kind: KindBadRequest, status: 400, requests: 1, says: []string{"messages: bad"}},
		{name: "429 then success", turns: []scripted.Turn{
			scripted.Fixed(scripted.Reply{Status: 429, Header: ms("20")}),
			scripted.Fixed(scripted.Reply{Status: 429, Header: ms("20")}),
			scripted.Say("ok")}, requests: 3},
		{name: "429 exhausted", opts: func(o *Options) { o.MaxRetries = 1 }, turns: []scripted.Turn{
			scripted.Fixed(scripted.Reply{Status: 429, Header: ms("20"), ErrorMessage: "Rate limit reached"}),
			scripted.Fixed(scripted.Reply{Status: 429, Header: ms("20"), ErrorMessage: "Rate limit reached"})},
			kind: KindRateLimit, status: 429, requests: 2, retry: true, says: []string{"Rate limit reached", "after 2 attempts", "asked to wait 20ms"}},
		{name: "429 wait too long", turns: []scripted.Turn{scripted.RateLimited("3600")},
			kind: KindRateLimit, status: 429, requests: 1, retry: true, says: []string{"asks to wait 1h0m0s, longer than the 5s"}},
		{name: "503 then success", opts: func(o *Options) { o.MaxRetries = 1 },
			turns:    []scripted.Turn{scripted.Fail(503, "overloaded"), scripted.Say("ok")}, // exponential backoff (≤0.5s)
			requests: 2},
		{name: "5xx exhausted", turns: []scripted.Turn{
			scripted.Fixed(scripted.Reply{Status: 500, Header: ms("1"), ErrorMessage: "boom"}),
			scripted.Fixed(scripted.Reply{Status: 502, Header: ms("1"), ErrorMessage: "boom"}),
			scripted.Fixed(scripted.Reply{Status: 529, Header: ms("1"), ErrorMessage: "Overloaded"})},
			kind: KindServer, status: 529, requests: 3, retry: true, says: []string{"Overloaded", "after 3 attempts", "try again later"}},
		{name: "no retries", opts: func(o *Options) { o.MaxRetries = -1 }, turns: []scripted.Turn{scripted.Fail(500, "boom")},
			kind: KindServer, status: 500, requests: 1, retry: true},
		{name: "timeout", opts: func(o *Options) { o.Timeout = 150 * time.Millisecond; o.MaxRetries = -1 },
			turns: []scripted.Turn{scripted.Fixed(scripted.Reply{Text: "late", Delay: 10 * time.Second})},
			kind:  KindTimeout, requests: 1, retry: true, says: []string{"timed out", "within 150ms per attempt"}},
		{name: "timeout mid-stream", opts: func(o *Options) { o.Timeout = 300 * time.Millisecond; o.MaxRetries = -1 },
			turns: []scripted.Turn{scripted.Fixed(scripted.Reply{Text: "a long answer that trickles in", EventDelay: 100 * time.Millisecond})},
			kind:  KindTimeout, requests: 1, retry: true},
		{name: "html instead of JSON", turns: []scripted.Turn{scripted.Fixed(scripted.Reply{ContentType: "text/html", Body: "<html>welcome to my blog</html>"})},
			kind: KindProtocol, status: 200, requests: 1, says: []string{"welcome to my blog", "base URL of an"}},
		{name: "empty JSON object", turns: []scripted.Turn{scripted.Fixed(scripted.Reply{ContentType: "application/json", Body: "{}"})},
			kind: KindProtocol, status: 200, requests: 1},
		{name: "error object with status 200", turns: []scripted.Turn{scripted.Fixed(scripted.Reply{ContentType: "application/json",
			Body: `{"error":{"message":"upstream provider quota exceeded","code":429}}`})},
			kind: KindProtocol, status: 200, requests: 1, says: []string{"the server says: upstream provider quota exceeded"}},
		{name: "truncated JSON", turns: []scripted.Turn{scripted.Fixed(scripted.Reply{ContentType: "application/json", Body: `{"id":"x","choices":[`})},
			kind: KindProtocol, status: 200, requests: 1},
		{name: "garbage stream", turns: []scripted.Turn{scripted.Fixed(scripted.Reply{ContentType: "text/event-stream", Body: "data: {not json}\n\n"})},
			kind: KindProtocol, status: 200, requests: 1},
		{name: "stream cut short", turns: []scripted.Turn{scripted.Fixed(scripted.Reply{Text: "half an answer", Truncate: true})},
			kind: KindProtocol, status: 200, requests: 1, says: []string{"stream ended before"}},
		{name: "error event in stream", turns: []scripted.Turn{scripted.Fixed(scripted.Reply{Text: "partial", StreamError: "Overloaded"})},
			kind: KindServer, status: 200, requests: 1, retry: true, says: []string{"Overloaded"}},
		{name: "response too large", opts: func(o *Options) { o.MaxResponseBytes = 2000 },
			turns: []scripted.Turn{scripted.Say(strings.Repeat("x", 10000))},
			kind:  KindProtocol, status: 200, requests: 1, says: []string{"larger than 2000 bytes"}},
	}
	for _, v := range variants {
		for _, c := range cases {
			streamOnly := strings.Contains(c.name, "stream")
			jsonOnly := c.name == "empty JSON object" || c.name == "truncated JSON" || c.name == "html instead of JSON" || c.name == "error object with status 200"
			if streamOnly && !v.stream || jsonOnly && v.stream {
				continue
			}
			t.Run(v.String()+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				srv := scripted.Start(t, c.server, c.turns...)
				cl := newClient(t, srv, v, c.opts)
				res, err := cl.Complete(context.Background(), hi)
				if got := srv.Count(); got != c.requests {
					t.Errorf("server received %d requests, want %d", got, c.requests)
				}
				if c.kind == "" {
					if err != nil || res.Text != "ok" {
						t.Fatalf("res %+v err %v", res, err)
					}
					return
				}
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("err = %v (%T), want *Error", err, err)
				}
				if e.Kind != c.kind || e.Status != c.status || e.Retryable != c.retry || e.Attempts != c.requests || e.Provider != v.provider {
					t.Errorf("got kind %s status %d retryable %v attempts %d provider %s; want %s %d %v %d",
						e.Kind, e.Status, e.Retryable, e.Attempts, e.Provider, c.kind, c.status, c.retry, c.requests)
				}
				msg := err.Error()
				t.Log(msg)
				for _, s := range c.says {
					if !strings.Contains(msg, s) {
						t.Errorf("message %q does not say %q", msg, s)
					}
				}
				if strings.ContainsAny(msg, "\x1b\n\r") {
					t.Errorf("message has control characters: %q", msg)
				}
				if strings.Contains(msg, "sk-test-0123456789") {
					t.Errorf("message leaks the API key: %q", msg)
				}
			})
		}
	}
}

// TestConnectionRefused: nothing listens at the base URL; the retries are connection attempts.
func TestConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	for _, p := range []string{OpenAI, Anthropic} {
		t.Run(p, func(t *testing.T) {
			c, err := New(Options{Provider: p, BaseURL: "http://" + addr + "/v1", MaxRetries: 1, MaxRetryDelay: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Complete(context.Background(), hi)
			var e *Error
			if !errors.As(err, &e) || e.Kind != KindConnection || !e.Retryable || e.Attempts != 2 || e.Status != 0 {
				t.Fatalf("err = %#v", err)
			}
			for _, s := range []string{"cannot reach the server", "connection refused", "is the server running", addr} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("message %q does not say %q", err, s)
				}
			}
		})
	}
}

// TestCanceled: the caller's context ends the call, and errors.Is sees it.
func TestCanceled(t *testing.T) {
	for _, v := range variants {
		t.Run(v.String(), func(t *testing.T) {
			checkGoroutines(t)
			srv := scripted.New(t, scripted.Fixed(scripted.Reply{Text: "late", Delay: 10 * time.Second}))
			c := newClient(t, srv, v, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			_, err := c.Complete(ctx, hi)
			var e *Error
			if !errors.As(err, &e) || e.Kind != KindTimeout || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v", err)
			}
			ctx, cancel = context.WithCancel(context.Background())
			cancel()
			_, err = c.Complete(ctx, hi)
			if !errors.As(err, &e) || e.Kind != KindCanceled || !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestOptionsErrors(t *testing.T) {
	cases := []struct {
		o    Options
		says string
	}{
		{Options{}, "no provider given"},
		{Options{Provider: "gemini"}, `unknown provider "gemini"`},
		{Options{Provider: OpenAI, BaseURL: "localhost:11434"}, "is not an http(s) URL"},
		{Options{Provider: OpenAI, BaseURL: "http://user:secret@host/v1"}, "carries credentials"},
		{Options{Provider: OpenAI, Debug: DebugOptions{Payload: "all"}}, `Debug.Payload "all"`},
	}
	for _, c := range cases {
		_, err := New(c.o)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("New(%+v) = %v, want %q", c.o, err, c.says)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("error leaks a credential: %v", err)
		}
	}
}

func TestRequestErrors(t *testing.T) {
	cases := []struct {
		r    Request
		says string
	}{
		{Request{Messages: []Message{{Role: RoleUser, Text: "x"}}}, "no model"},
		{Request{Model: "m"}, "no messages"},
		{Request{Model: "m", Messages: []Message{{Role: "system", Text: "x"}}}, "unknown role"},
		{Request{Model: "m", Messages: []Message{{Role: RoleUser}}, Tools: []ToolDef{{Name: "a"}, {Name: "a"}}}, "listed twice"},
		{Request{Model: "m", Messages: []Message{{Role: RoleUser}}, Tools: []ToolDef{{Name: "a", InputSchema: []byte(`[1]`)}}}, "not a JSON object"},
		{Request{Model: "m", Messages: []Message{{Role: RoleAssistant, ToolCalls: []ToolCall{{Name: "exec"}}}}}, "needs an id"},
		{Request{Model: "m", Messages: []Message{{Role: RoleTool}}}, "needs results"},
	}
	for _, p := range []string{OpenAI, Anthropic} {
		c, _ := New(Options{Provider: p, BaseURL: "http://127.0.0.1:9/v1", MaxRetries: -1})
		for _, tc := range cases {
			_, err := c.Complete(context.Background(), tc.r)
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("%s: %+v: err = %v, want %q", p, tc.r, err, tc.says)
			}
		}
	}
}
