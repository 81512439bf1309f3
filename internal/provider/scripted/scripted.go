// Package scripted is a model server for tests: an httptest.Server that speaks OpenAI Chat
// Completions and Anthropic Messages — plain JSON and SSE streams, whichever the client asks
// for — driven by a script of turns. Each turn is a function of the request it answers (parsed:
// model, tools, messages, tool results, and the raw body) returning a Reply: text, tool calls,
// a malformed tool call, an HTTP error with headers such as retry-after, or a body that is not
// the protocol at all, optionally after a delay.
//
// It is written from the providers' wire documentation, not from the SDKs, and it validates
// requests the way the real APIs do (tool results must answer the previous turn's calls, text
// blocks must not be empty, …), so an SDK or a harness that passes against it sends what the
// real APIs accept. A request that the real API would reject gets the same 400 and fails the
// test, so does a request past the end of the script (HTTP 500, no retry).
//
//	srv := scripted.New(t,
//		scripted.Call("exec", `{"code":"return 1+1"}`),
//		func(r *scripted.Request) scripted.Reply {
//			return scripted.Reply{Text: "the answer is " + r.LastResults()[0].Content}
//		})
//	client, _ := provider.New(provider.Options{Provider: "openai", BaseURL: srv.OpenAIBaseURL()})
package scripted

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Provider names, as in Request.Provider.
const (
	OpenAI    = "openai"
	Anthropic = "anthropic"
)

// maxBody bounds a request body the server reads.
const maxBody = 32 << 20

// Turn answers one request.
type Turn func(*Request) Reply

// Options configure a Server.
type Options struct {
	// APIKey, when set, must arrive as the provider takes it (Authorization: Bearer; for
	// Anthropic also x-api-key); anything else gets the provider's 401.
	APIKey string
	// Repeat answers every request after the script is used up (a hammer test's endless
	// model). Without it such a request is a test failure.
	Repeat Turn
	// Lenient turns request validation failures into plain 400s without failing the test.
	Lenient bool
	// NoRecord keeps no requests (Requests returns none): a benchmark or a soak measures the
	// client's memory, not the server's record of every body.
	NoRecord bool
}

// Server is a running scripted model. Close it, or let t.Cleanup do so.
type Server struct {
	// URL is the server's root, e.g. http://127.0.0.1:PORT.
	URL  string
	srv  *httptest.Server
	t    testing.TB
	opts Options

	mu    sync.Mutex
	turns []Turn
	next  int
	reqs  []*Request
	count int
}

// New starts a server with the given script and default options.
func New(t testing.TB, turns ...Turn) *Server { return Start(t, Options{}, turns...) }

// Start starts a server with options and a script; t.Cleanup closes it.
func Start(t testing.TB, opts Options, turns ...Turn) *Server {
	t.Helper()
	s := &Server{t: t, opts: opts, turns: append([]Turn(nil), turns...)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.Close)
	return s
}

// OpenAIBaseURL is the base URL an OpenAI client is given (the server's root plus /v1).
func (s *Server) OpenAIBaseURL() string { return s.URL + "/v1" }

// AnthropicBaseURL is the base URL an Anthropic client is given (the client adds /v1/messages).
func (s *Server) AnthropicBaseURL() string { return s.URL }

// BaseURL is the base URL for a client of provider.
func (s *Server) BaseURL(provider string) string {
	if provider == Anthropic {
		return s.AnthropicBaseURL()
	}
	return s.OpenAIBaseURL()
}

// Add appends turns to the script.
func (s *Server) Add(turns ...Turn) {
	s.mu.Lock()
	s.turns = append(s.turns, turns...)
	s.mu.Unlock()
}

// Requests returns every request to a model endpoint that passed authentication, in order,
// those the server rejected as invalid included.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.reqs...)
}

// Count is the number of HTTP requests received, whatever their path or outcome.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

// Remaining is the number of scripted turns not used yet.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.turns) - s.next
}

// Close stops the server, waiting for requests in flight.
func (s *Server) Close() { s.srv.Close() }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.count++
	n := s.count
	s.mu.Unlock()

	var provider string
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		provider = OpenAI
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		provider = Anthropic
	default:
		// What api.openai.com answers for a path it does not serve.
		writeJSON(w, http.StatusNotFound, nil, map[string]any{"error": map[string]any{
			"message": fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path), "type": "invalid_request_error", "param": nil, "code": nil}})
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return // the client went away
	}
	req := &Request{N: n, Provider: provider, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	w.Header().Set(requestIDHeader(provider), "req_scripted_"+strconv.Itoa(n))

	if status, typ, msg := s.authenticate(provider, r); status != 0 {
		writeError(w, provider, status, nil, typ, msg)
		return
	}
	var perr error
	if len(body) > maxBody {
		perr = fmt.Errorf("request body larger than %d bytes", maxBody)
	} else if provider == OpenAI {
		perr = parseOpenAI(body, req)
	} else {
		perr = parseAnthropic(body, req)
	}
	if !s.opts.NoRecord {
		s.mu.Lock()
		s.reqs = append(s.reqs, req)
		s.mu.Unlock()
	}
	if perr != nil {
		if !s.opts.Lenient {
			s.t.Errorf("scripted model: request %d (%s) would be rejected by the real API: %v", n, provider, perr)
		}
		writeError(w, provider, http.StatusBadRequest, nil, "invalid_request_error", perr.Error())
		return
	}

	turn, ok := s.nextTurn()
	if !ok {
		s.t.Errorf("scripted model: request %d (%s) arrived but the script has only %d turns", n, provider, n-1)
		h := http.Header{"X-Should-Retry": {"false"}}
		writeError(w, provider, http.StatusInternalServerError, h, "", fmt.Sprintf("scripted model: the script has no turn for request %d", n))
		return
	}
	reply := turn(req)
	if !sleep(r.Context(), reply.Delay) {
		return
	}
	s.render(w, r, req, reply)
}

func (s *Server) nextTurn() (Turn, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next < len(s.turns) {
		t := s.turns[s.next]
		s.next++
		return t, true
	}
	return s.opts.Repeat, s.opts.Repeat != nil
}

func (s *Server) authenticate(provider string, r *http.Request) (int, string, string) {
	if provider == Anthropic && r.Header.Get("Anthropic-Version") == "" {
		return http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required"
	}
	if s.opts.APIKey == "" {
		return 0, "", ""
	}
	if provider == OpenAI {
		if r.Header.Get("Authorization") != "Bearer "+s.opts.APIKey {
			return http.StatusUnauthorized, "invalid_api_key", "Incorrect API key provided. You can find your API key at your provider's dashboard."
		}
		return 0, "", ""
	}
	// The Messages API takes the key as x-api-key (what the API reference documents and
	// package provider sends) or as a bearer token (what OAuth clients send).
	if r.Header.Get("X-Api-Key") != s.opts.APIKey && r.Header.Get("Authorization") != "Bearer "+s.opts.APIKey {
		return http.StatusUnauthorized, "authentication_error", "invalid x-api-key"
	}
	return 0, "", ""
}

func requestIDHeader(provider string) string {
	if provider == Anthropic {
		return "Request-Id"
	}
	return "X-Request-Id"
}

// sleep waits d or until the client goes away; it reports whether to go on.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
