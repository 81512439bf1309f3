package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"syscall"
	"time"

	"github.com/tidwall/gjson"
)

const (
	maxErrorBody = 1 << 20 // an error body is read whole, up to this, to report the server's message
	headBytes    = 512     // the start of a success body, kept to explain protocol errors
	drainBytes   = 4 << 10 // read after a complete reply so the connection can be reused
	// maxBackoff caps the exponential wait between retries when the server does not say how
	// long to wait (Options.MaxRetryDelay caps it further).
	maxBackoff = 8 * time.Second
	userAgent  = "codemode-provider"
)

var errTooLarge = errors.New("response body exceeds the size limit")

// wire is what one provider's dialect contributes to a call: how to read a reply (one JSON
// body or an SSE stream) and how to read its error bodies. Everything else — the A10 check,
// retries, bounds, debug taps and error classification — is the same for both and lives here.
type wire struct {
	decodeJSON   func(body []byte) (*Response, error)
	decodeStream func(events *sseReader) (*Response, error)
	errorBody    func(body []byte) apiError
}

// protocolError is a reply that arrived whole but is not the provider's protocol (no choices,
// a stream that ended half-way, JSON of the wrong shape).
type protocolError struct{ detail string }

func (e *protocolError) Error() string { return e.detail }

func protocolf(format string, args ...any) error {
	return &protocolError{detail: fmt.Sprintf(format, args...)}
}

// eventError is an error event inside a 200 stream: the server failed part-way through.
type eventError struct{ api apiError }

func (e *eventError) Error() string { return "error event in the stream: " + e.api.message }

// errStatus marks an attempt that ended in an HTTP error status; the status, headers and body
// are in the call.
var errStatus = errors.New("the server answered with an error status")

// apiError is what a provider's error object says.
type apiError struct {
	message string
	typ     string
}

// call is the state of one Complete: the settings, and what the last HTTP attempt saw (status,
// headers, the start of the body), so that an *Error can explain itself even when the reply
// could not be parsed at all.
type call struct {
	s        *settings
	provider string
	model    string

	attempts    int
	payloadErr  error
	status      int
	header      http.Header
	contentType string
	errBody     []byte
	head        []byte
	retryAfter  time.Duration
	capped      bool  // the server asked to wait longer than MaxRetryDelay
	tooLarge    bool  // the body went past MaxResponseBytes
	readErr     error // reading the success body failed (connection dropped, attempt timed out)
	timedOut    bool  // the attempt's own timeout passed
}

func newCall(s *settings, provider, model string) *call {
	return &call{s: s, provider: provider, model: model}
}

// post sends body to url and reads the reply with w, retrying what may succeed later. header
// carries the provider's own headers (authentication, version). edits, for tests, change the
// body after rendering, as any later layer could: the A10 check must see the final bytes.
func (c *call) post(parent context.Context, url string, header http.Header, body []byte, stream bool, w wire, edits ...func([]byte) []byte) (*Response, error) {
	for _, edit := range edits {
		body = edit(body)
	}
	for {
		if err := c.checkPayload(body); err != nil {
			return nil, c.refusal(err)
		}
		if parent.Err() != nil {
			return nil, c.contextError(parent)
		}
		res, err := c.attempt(parent, url, header, body, stream, w)
		if err == nil {
			return res, nil
		}
		if parent.Err() != nil {
			return nil, c.contextError(parent)
		}
		retry := c.retryable(err)
		if !retry || c.attempts > c.s.MaxRetries {
			return nil, c.fail(err, w)
		}
		delay := c.delay()
		c.s.Logger.Warn("model request failed; retrying", "provider", c.provider, "attempt", c.attempts,
			"status", c.status, "wait", delay.String())
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-parent.Done():
			t.Stop()
			return nil, c.contextError(parent)
		}
	}
}

// checkPayload runs A10 and the payload log on the bytes about to be sent, before every
// attempt. Only the check fails closed; logging alone never stops a request.
func (c *call) checkPayload(body []byte) error {
	if c.s.CheckPayload == nil && c.s.Debug.Payload == "" {
		return nil
	}
	names, err := toolNames(body)
	switch {
	case err != nil && c.s.CheckPayload != nil:
		return fmt.Errorf("cannot read the tool list of the request body: %w", err)
	case err != nil:
		c.s.Logger.Warn("model payload: cannot read the tool list", "provider", c.provider, "error", err.Error())
	default:
		c.logPayload(c.attempts+1, names, body)
	}
	if c.s.CheckPayload != nil {
		return c.s.CheckPayload(names)
	}
	return nil
}

// attempt is one HTTP request and the whole reading of its reply, under Options.Timeout.
func (c *call) attempt(parent context.Context, url string, header http.Header, body []byte, stream bool, w wire) (*Response, error) {
	ctx, cancel := context.WithTimeout(parent, c.s.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = header.Clone()
	c.attempts++
	c.reset()

	began := time.Now()
	res, err := c.s.client.Do(req)
	if err != nil {
		c.timedOut = ctx.Err() != nil
		c.logAttempt(req, nil, began, err)
		return nil, err
	}
	c.observe(res)
	c.logAttempt(req, res, began, nil)
	if res.StatusCode < 200 || res.StatusCode > 299 {
		c.readErrorBody(res)
		return nil, errStatus
	}
	bb := &boundedBody{rc: res.Body, left: c.s.MaxResponseBytes, c: c, tap: c.newTap(res)}
	defer bb.Close()
	var out *Response
	if isStream(res.Header.Get("Content-Type"), stream) {
		out, err = w.decodeStream(newSSEReader(bb))
	} else {
		var raw []byte
		if raw, err = readAll(bb, res.ContentLength, c.s.MaxResponseBytes); err == nil {
			out, err = w.decodeJSON(raw)
		}
	}
	if err != nil {
		c.timedOut = ctx.Err() != nil
		return nil, err
	}
	// Read what is left (the end of the stream, a newline) so the connection can be reused.
	_, _ = io.CopyN(io.Discard, bb, drainBytes)
	if c.header != nil {
		out.RequestID = clean(requestID(c.header), 100)
	}
	return out, nil
}

// isStream says how to read a success body: by its content type when it names JSON or SSE
// (some OpenAI-compatible servers answer a stream request with one JSON body), else by what
// was asked for.
func isStream(contentType string, asked bool) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	switch mt {
	case "text/event-stream":
		return true
	case "application/json":
		return false
	}
	return asked
}

// readAll reads a whole body, sized by its Content-Length when that is within the limit.
func readAll(r io.Reader, length, limit int64) ([]byte, error) {
	var b bytes.Buffer
	if length > 0 && length <= limit {
		b.Grow(int(length) + 1)
	}
	_, err := b.ReadFrom(r)
	return b.Bytes(), err
}

// reset forgets what the previous attempt saw.
func (c *call) reset() {
	c.status, c.header, c.contentType = 0, nil, ""
	c.head, c.errBody = nil, nil
	c.retryAfter, c.capped, c.tooLarge, c.readErr, c.timedOut = 0, false, false, nil, false
}

// observe records the response's status and headers and applies the retry-after cap.
func (c *call) observe(res *http.Response) {
	c.status, c.header, c.contentType = res.StatusCode, res.Header, res.Header.Get("Content-Type")
	if ra, ok := retryAfter(res.Header); ok {
		c.retryAfter = ra
		c.capped = ra > c.s.MaxRetryDelay && retryableStatus(res.StatusCode)
	}
}

func (c *call) readErrorBody(res *http.Response) {
	limit := min(int64(maxErrorBody), c.s.MaxResponseBytes)
	b, _ := io.ReadAll(io.LimitReader(res.Body, limit))
	_ = res.Body.Close()
	c.errBody = b
}

// retryable says whether the failed attempt may succeed if sent again: an error status the
// server calls retryable (408, 409, 429, 5xx, or x-should-retry: true) unless it asks for a
// longer wait than we allow; a connection that failed or dropped; an attempt that timed out.
// A reply that is not the protocol, an error event in a stream and an oversized body are not.
func (c *call) retryable(err error) bool {
	var pe *protocolError
	var ee *eventError
	switch {
	case errors.As(err, &pe), errors.As(err, &ee), c.tooLarge, errors.Is(err, errTooLarge):
		return false
	case errors.Is(err, errStatus):
		if c.capped {
			return false
		}
		switch c.header.Get("X-Should-Retry") {
		case "true":
			return true
		case "false":
			return false
		}
		return retryableStatus(c.status)
	}
	return true
}

// delay is how long to wait before the next attempt: what the server asked (retry-after, at
// most MaxRetryDelay since a longer wait is not retried), else 0.5s doubling per retry, capped
// at 8s and MaxRetryDelay, less up to a quarter of jitter.
func (c *call) delay() time.Duration {
	if c.status != 0 && c.header != nil {
		if ra, ok := retryAfter(c.header); ok {
			return min(ra, c.s.MaxRetryDelay)
		}
	}
	d := min(maxBackoff, c.s.MaxRetryDelay)
	if n := c.attempts - 1; n < 5 {
		d = min(d, 500*time.Millisecond<<n)
	}
	if j := int64(d / 4); j > 0 {
		d -= time.Duration(rand.Int64N(j))
	}
	return d
}

func (c *call) logAttempt(req *http.Request, res *http.Response, began time.Time, err error) {
	if !c.s.Debug.Transport {
		return
	}
	status := 0
	if res != nil {
		status = res.StatusCode
	}
	attrs := []any{"provider", c.provider, "attempt", c.attempts, "method", req.Method, "url", redactURL(req.URL),
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
	c.s.Logger.Info("model http attempt", attrs...)
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
// bytes for error messages, records a failed read and feeds the SSE debug tap.
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
			b.c.tooLarge = true
			return 0, errTooLarge
		}
		b.failed(err)
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if n > 0 {
		if len(b.c.head) < headBytes {
			b.c.head = append(b.c.head, p[:min(n, headBytes-len(b.c.head))]...)
		}
		if b.tap != nil {
			b.tap.feed(p[:n])
		}
	}
	b.failed(err)
	return n, err
}

func (b *boundedBody) failed(err error) {
	if err != nil && err != io.EOF && b.c.readErr == nil {
		b.c.readErr = err
	}
}

func (b *boundedBody) Close() error { return b.rc.Close() }

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

// refusal is the *Error for a body CheckPayload refused: nothing (more) was sent.
func (c *call) refusal(err error) error {
	c.payloadErr = err
	e := &Error{Provider: c.provider, Kind: KindPayloadRejected, Attempts: c.attempts, Err: err}
	e.hint = "nothing was sent"
	if c.attempts > 0 {
		e.hint = "the request was not sent again"
	}
	return e
}

// contextError is the *Error for the caller's context ending (parent is the caller's context,
// not the attempt's, so a per-attempt timeout is not mistaken for the caller's).
func (c *call) contextError(parent context.Context) error {
	e := &Error{Provider: c.provider, Attempts: c.attempts, Err: parent.Err(), Status: c.status, RetryAfter: c.retryAfter}
	if c.header != nil {
		e.RequestID = clean(requestID(c.header), 100)
	}
	if errors.Is(parent.Err(), context.DeadlineExceeded) {
		e.Kind, e.Retryable = KindTimeout, true
		e.hint = "the caller's deadline passed"
	} else {
		e.Kind = KindCanceled
	}
	return e
}

// fail turns the last attempt's failure into an *Error.
func (c *call) fail(err error, w wire) error {
	var pe *protocolError
	if errors.As(err, &pe) {
		return c.protocol(pe.detail)
	}
	e := &Error{Provider: c.provider, Attempts: c.attempts, Err: err, Status: c.status, RetryAfter: c.retryAfter}
	if c.header != nil {
		e.RequestID = clean(requestID(c.header), 100)
	}
	var ee *eventError
	switch {
	case c.tooLarge || errors.Is(err, errTooLarge):
		e.Kind = KindProtocol
		e.hint = fmt.Sprintf("the response is larger than %d bytes", c.s.MaxResponseBytes)
	case errors.As(err, &ee):
		e.Message, e.Type = clean(ee.api.message, 500), clean(ee.api.typ, 100)
		c.classifyStatus(e)
	case errors.Is(err, errStatus) && c.status >= 300 && c.status < 400:
		e.Kind = KindProtocol
		e.Message = "a redirect"
		where := "elsewhere"
		if u, perr := url.Parse(c.header.Get("Location")); perr == nil && u.String() != "" {
			where = "to " + clean(redactURL(u), 200)
		}
		e.hint = fmt.Sprintf("the server redirects %s, and model requests do not follow redirects (they would carry the API key); set the base URL to where the API really is", where)
	case errors.Is(err, errStatus):
		a := w.errorBody(c.errBody)
		e.Message, e.Type = clean(a.message, 500), clean(a.typ, 100)
		if e.Message == "" {
			e.Message = clean(errorMessage(c.errBody), 500)
		}
		c.classifyStatus(e)
	case c.timedOut || errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		e.Kind, e.Retryable, e.Status = KindTimeout, true, 0
		e.hint = fmt.Sprintf("no complete response within %s per attempt; raise the timeout or check the server", c.s.Timeout)
	case c.status != 0:
		// The reply had begun (status 200) when the connection broke.
		e.Kind, e.Retryable = KindConnection, true
		e.Message = clean("the connection broke while reading the response: "+netDetail(err), 300)
		e.hint = "the server or a proxy dropped the connection; try again"
	default:
		e.Kind, e.Retryable, e.Status = KindConnection, true, 0
		e.Message = clean(netDetail(err), 300)
		e.hint = fmt.Sprintf("is the server running, and is %s the right base URL?", redactURL(c.s.base))
	}
	return e
}

// protocol reports a response that is not a usable reply (no choices, a stream that stopped
// half-way, JSON of the wrong shape, an HTML page).
func (c *call) protocol(detail string) error {
	// Some proxies answer errors with status 200 and an error object; say what it says.
	for _, path := range []string{"error.message", "error"} {
		if m := gjson.GetBytes(c.head, path); m.Type == gjson.String && m.Str != "" {
			detail += "; the server says: " + m.Str
			break
		}
	}
	detail = fmt.Sprintf("%s; content-type %q; body starts %q", detail, c.contentType, clean(string(c.head), 120))
	e := &Error{Provider: c.provider, Kind: KindProtocol, Attempts: c.attempts, Status: c.status, Message: clean(detail, 500)}
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

// statusOfType maps a provider error type (an error event inside a 200 stream) to the status
// that type comes with.
func statusOfType(t string) int {
	switch t {
	case "authentication_error", "invalid_api_key":
		return 401
	case "permission_error":
		return 403
	case "not_found_error":
		return 404
	case "rate_limit_error", "rate_limit_exceeded", "requests", "tokens":
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

func netDetail(err error) string {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected EOF"
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return "cannot resolve host " + dns.Name
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err.Error()
	}
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		return ue.Err.Error()
	}
	return err.Error()
}
