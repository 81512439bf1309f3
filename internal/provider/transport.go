package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/tidwall/gjson"
)

// Both SDKs define Middleware as an alias of this function type, so one method serves both.
type middlewareNext = func(*http.Request) (*http.Response, error)

const (
	maxErrorBody = 1 << 20 // an error body is read whole, up to this, to report the server's message
	headBytes    = 512     // the start of a success body, kept to explain protocol errors
)

var errTooLarge = errors.New("response body exceeds the size limit")

// call is the state of one Complete. The SDK runs its middleware once per HTTP attempt, so the
// middleware is where the final serialized body can be checked (A10) before any byte leaves,
// and where status, headers and the start of each body are seen for error messages that do
// not depend on the SDK having parsed them.
type call struct {
	s        *settings
	provider string
	model    string
	cancel   context.CancelCauseFunc

	mu          sync.Mutex
	attempts    int
	payloadErr  error
	status      int
	header      http.Header
	contentType string
	errBody     []byte
	head        []byte
	retryAfter  time.Duration
	capped      bool // the server asked to wait longer than MaxRetryDelay
	tooLarge    bool
}

func newCall(s *settings, provider, model string) *call {
	return &call{s: s, provider: provider, model: model}
}

// start derives the context the SDK runs in: cancelling it with a cause is how a refused
// payload stops the SDK's retry loop at once instead of backing off and asking again.
func (c *call) start(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	c.cancel = cancel
	return ctx, func() { cancel(nil) }
}

func (c *call) middleware(req *http.Request, next middlewareNext) (*http.Response, error) {
	c.mu.Lock()
	attempt := c.attempts + 1
	c.mu.Unlock()
	// The body is only read when something needs it: the A10 check or payload logging. Only
	// the check fails closed; logging alone never stops a request.
	if c.s.CheckPayload != nil || c.s.Debug.Payload != "" {
		body, err := requestBody(req)
		var names []string
		if err == nil {
			names, err = toolNames(body)
		}
		switch {
		case err != nil && c.s.CheckPayload != nil:
			return nil, c.refuse(fmt.Errorf("cannot read the tool list of the request body: %w", err))
		case err != nil:
			c.s.Logger.Warn("model payload: cannot read the tool list", "provider", c.provider, "error", err.Error())
		default:
			c.logPayload(attempt, names, body)
		}
		if c.s.CheckPayload != nil {
			if err := c.s.CheckPayload(names); err != nil {
				return nil, c.refuse(err)
			}
		}
	}
	c.mu.Lock()
	c.attempts = attempt
	c.mu.Unlock()

	began := time.Now()
	res, err := next(req)
	if err != nil {
		c.logAttempt(req, attempt, nil, began, err)
		return res, err
	}
	c.observe(res)
	c.logAttempt(req, attempt, res, began, nil)
	if res.StatusCode >= 400 {
		c.readErrorBody(res)
		return res, nil
	}
	res.Body = &boundedBody{rc: res.Body, left: c.s.MaxResponseBytes, c: c, tap: c.newTap(res)}
	return res, nil
}

// refuse records a payload refusal and cancels the call so the SDK does not retry it.
func (c *call) refuse(err error) error {
	c.mu.Lock()
	c.payloadErr = err
	c.mu.Unlock()
	if c.cancel != nil {
		c.cancel(err)
	}
	return err
}

// observe records the response's status and headers and enforces the retry-after cap: when the
// server wants a longer wait than we allow, x-should-retry tells the SDK not to retry (both
// SDKs respect it; Anthropic's would otherwise sleep as long as the server says).
func (c *call) observe(res *http.Response) {
	ra, ok := retryAfter(res.Header)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.status, c.header, c.contentType = res.StatusCode, res.Header, res.Header.Get("Content-Type")
	c.head, c.errBody = nil, nil
	c.retryAfter, c.capped = 0, false
	if ok {
		c.retryAfter = ra
		if ra > c.s.MaxRetryDelay && retryableStatus(res.StatusCode) {
			c.capped = true
			res.Header.Set("X-Should-Retry", "false")
		}
	}
}

func (c *call) readErrorBody(res *http.Response) {
	limit := min(int64(maxErrorBody), c.s.MaxResponseBytes)
	b, _ := io.ReadAll(io.LimitReader(res.Body, limit))
	_ = res.Body.Close()
	c.mu.Lock()
	c.errBody = b
	c.mu.Unlock()
	res.Body = io.NopCloser(bytes.NewReader(b))
}

func (c *call) logAttempt(req *http.Request, attempt int, res *http.Response, began time.Time, err error) {
	log := c.s.Logger
	status := 0
	if res != nil {
		status = res.StatusCode
	}
	if c.s.Debug.Transport {
		attrs := []any{"provider", c.provider, "attempt", attempt, "method", req.Method, "url", redactURL(req.URL),
			"status", status, "ms", time.Since(began).Milliseconds()}
		if res != nil {
			if id := requestID(res.Header); id != "" {
				attrs = append(attrs, "request_id", clean(id, 100))
			}
			if ra, ok := retryAfter(res.Header); ok {
				attrs = append(attrs, "retry_after", ra.String())
			}
		}
		if err != nil {
			attrs = append(attrs, "error", clean(err.Error(), 300))
		}
		log.Info("model http attempt", attrs...)
	}
	retry := err != nil || retryableStatus(status)
	if res != nil && res.Header.Get("X-Should-Retry") != "" {
		retry = res.Header.Get("X-Should-Retry") == "true"
	}
	if attempt <= c.s.MaxRetries && retry && req.Context().Err() == nil {
		log.Warn("model request failed; the SDK retries it", "provider", c.provider, "attempt", attempt, "status", status)
	}
}

func (c *call) logPayload(attempt int, names []string, body []byte) {
	switch c.s.Debug.Payload {
	case DebugPayloadTools:
		c.s.Logger.Info("model payload tools", "provider", c.provider, "attempt", attempt, "names", names)
	case DebugPayloadFullRedacted:
		c.s.Logger.Info("model payload (redacted)", "provider", c.provider, "attempt", attempt,
			"body", redactedSnapshot(body, c.s.APIKey, snapshotLimit))
	}
}

// boundedBody enforces MaxResponseBytes on a success body (plain or a stream), keeps its first
// bytes for error messages and feeds the SSE debug tap.
type boundedBody struct {
	rc   io.ReadCloser
	left int64
	c    *call
	tap  *sseTap
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// The limit is reached: one more byte means the body is too large.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			b.c.mu.Lock()
			b.c.tooLarge = true
			b.c.mu.Unlock()
			// Cancelling the call stops the Anthropic SDK from retrying what it would take for
			// a connection dropped mid-body.
			if b.c.cancel != nil {
				b.c.cancel(errTooLarge)
			}
			return 0, errTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if n > 0 {
		b.c.mu.Lock()
		if len(b.c.head) < headBytes {
			b.c.head = append(b.c.head, p[:min(n, headBytes-len(b.c.head))]...)
		}
		b.c.mu.Unlock()
		if b.tap != nil {
			b.tap.feed(p[:n])
		}
	}
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

// requestBody returns the body about to be sent without consuming it.
func requestBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	if req.GetBody != nil {
		rc, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return io.ReadAll(rc)
	}
	b, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(b))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return b, nil
}

func retryableStatus(s int) bool {
	return s == http.StatusRequestTimeout || s == http.StatusConflict || s == http.StatusTooManyRequests || s >= 500
}

// retryAfter reads retry-after-ms (OpenAI, Anthropic) or retry-after (seconds or an HTTP date).
func retryAfter(h http.Header) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && !math.IsInf(f, 0) {
			return durationOf(f, time.Millisecond), true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && !math.IsInf(f, 0) {
		return durationOf(f, time.Second), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, time.Until(t)), true
	}
	return 0, false
}

func durationOf(f float64, unit time.Duration) time.Duration {
	if f*float64(unit) >= math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(f * float64(unit))
}

func requestID(h http.Header) string {
	if id := h.Get("X-Request-Id"); id != "" {
		return id
	}
	return h.Get("Request-Id")
}

// apiError is what a provider's SDK error says, when the SDK produced one.
type apiError struct {
	status  int
	message string
	typ     string
}

// fail turns whatever the SDK returned into an *Error. parent is the caller's context (not the
// call's own), so that a refusal or a per-attempt timeout is not mistaken for the caller's.
func (c *call) fail(parent context.Context, err error, api func(error) (apiError, bool)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := &Error{Provider: c.provider, Attempts: c.attempts, Err: err, Status: c.status, RetryAfter: c.retryAfter}
	if c.header != nil {
		e.RequestID = clean(requestID(c.header), 100)
	}
	switch {
	case c.payloadErr != nil:
		e.Kind, e.Err, e.Status, e.RequestID = KindPayloadRejected, c.payloadErr, 0, ""
		e.hint = "nothing was sent"
		if c.attempts > 0 {
			e.hint = "the request was not sent again"
		}
		return e
	case parent.Err() != nil:
		e.Err = parent.Err()
		if errors.Is(parent.Err(), context.DeadlineExceeded) {
			e.Kind, e.Retryable = KindTimeout, true
			e.hint = "the caller's deadline passed"
		} else {
			e.Kind = KindCanceled
		}
		return e
	case c.tooLarge || errors.Is(err, errTooLarge):
		e.Kind = KindProtocol
		e.hint = fmt.Sprintf("the response is larger than %d bytes", c.s.MaxResponseBytes)
		return e
	}
	if a, ok := api(err); ok {
		if a.status != 0 {
			e.Status = a.status
		}
		e.Message, e.Type = clean(a.message, 500), clean(a.typ, 100)
		if e.Message == "" {
			e.Message = clean(errorMessage(c.errBody), 500)
		}
		if e.Status >= 400 || e.Type != "" {
			c.classifyStatus(e)
			return e
		}
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		e.Kind, e.Retryable = KindTimeout, true
		e.hint = fmt.Sprintf("no complete response within %s per attempt; raise the timeout or check the server", c.s.Timeout)
		e.Status = 0
	case c.status >= 400:
		if e.Message == "" {
			e.Message = clean(errorMessage(c.errBody), 500)
		}
		c.classifyStatus(e)
	case c.status == 0 || isNetError(err):
		e.Kind, e.Retryable, e.Status = KindConnection, true, 0
		e.Message = clean(netDetail(err), 300)
		e.hint = fmt.Sprintf("is the server running, and is %s the right base URL?", redactURL(c.s.base))
	default:
		e.Kind = KindProtocol
		e.Message = clean(fmt.Sprintf("%v; content-type %q; body starts %q", err, c.contentType, clean(string(c.head), 120)), 500)
		e.hint = c.protocolHint()
	}
	return e
}

// protocol reports a response that parsed but is not a usable reply (no choices, a stream that
// stopped half-way).
func (c *call) protocol(detail string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Some proxies answer errors with status 200 and an error object; say what it says.
	for _, path := range []string{"error.message", "error"} {
		if m := gjson.GetBytes(c.head, path); m.Type == gjson.String && m.Str != "" {
			detail += "; the server says: " + m.Str
			break
		}
	}
	e := &Error{Provider: c.provider, Kind: KindProtocol, Attempts: c.attempts, Status: c.status, Message: clean(detail, 300)}
	if c.header != nil {
		e.RequestID = clean(requestID(c.header), 100)
	}
	e.hint = c.protocolHint()
	return e
}

func (c *call) protocolHint() string {
	if c.provider == Anthropic {
		return fmt.Sprintf("is %s the base URL of an Anthropic Messages API?", redactURL(c.s.base))
	}
	return fmt.Sprintf("is %s the base URL of an OpenAI-compatible chat completions API?", redactURL(c.s.base))
}

// classifyStatus fills Kind, Retryable and the hint from the HTTP status (or, for an error
// event inside a 200 stream, from the provider's error type).
func (c *call) classifyStatus(e *Error) {
	status := e.Status
	if status < 400 {
		status = statusOfType(e.Type)
	}
	switch {
	case status == 401 || status == 403:
		e.Kind = KindAuth
		switch {
		case c.s.APIKey == "":
			e.hint = fmt.Sprintf("no API key was given: set %s", c.s.APIKeyVar)
		case status == 403:
			e.hint = fmt.Sprintf("check the key in %s and that it may use model %q", c.s.APIKeyVar, c.model)
		default:
			e.hint = fmt.Sprintf("check the key in %s", c.s.APIKeyVar)
		}
	case status == 404:
		e.Kind = KindNotFound
		if c.provider == Anthropic {
			e.hint = fmt.Sprintf("check the model name %q and the base URL %s (requests go to <base>/v1/messages)", c.model, redactURL(c.s.base))
		} else {
			e.hint = fmt.Sprintf("check the model name %q and the base URL %s (OpenAI-compatible servers usually end in /v1)", c.model, redactURL(c.s.base))
		}
	case status == 429:
		e.Kind, e.Retryable = KindRateLimit, true
		switch {
		case c.capped:
			e.hint = fmt.Sprintf("the server asks to wait %s, longer than the %s this client waits; try again later", e.RetryAfter.Round(time.Second), c.s.MaxRetryDelay)
		case e.RetryAfter > 0:
			e.hint = fmt.Sprintf("the server asked to wait %s; try again later or lower the request rate", e.RetryAfter.Round(time.Millisecond))
		default:
			e.hint = "try again later or lower the request rate"
		}
	case retryableStatus(status):
		e.Kind, e.Retryable = KindServer, true
		e.hint = "the provider is failing or overloaded; try again later"
		if c.capped {
			e.hint = fmt.Sprintf("the server asks to wait %s, longer than the %s this client waits; try again later", e.RetryAfter.Round(time.Second), c.s.MaxRetryDelay)
		}
	default:
		e.Kind = KindBadRequest
	}
}

// statusOfType maps an Anthropic error type (an `error` event inside a 200 stream) to the
// status that type comes with.
func statusOfType(t string) int {
	switch t {
	case "authentication_error":
		return 401
	case "permission_error":
		return 403
	case "not_found_error":
		return 404
	case "rate_limit_error":
		return 429
	case "api_error", "overloaded_error", "server_error":
		return 500
	}
	return 400
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isNetError(err error) bool {
	var ne net.Error
	var oe *net.OpError
	return errors.As(err, &ne) || errors.As(err, &oe) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET)
}

func netDetail(err error) string {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return "cannot resolve host " + dns.Name
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err.Error()
	}
	return err.Error()
}
