package provider

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
)

// Kind classifies a failed model call by what a person can do about it.
type Kind string

const (
	KindAuth            Kind = "auth"             // 401/403: the API key
	KindNotFound        Kind = "not_found"        // 404: the model name or the base URL
	KindRateLimit       Kind = "rate_limit"       // 429 after the retries we allow
	KindServer          Kind = "server"           // 5xx (or 408/409) after retries
	KindBadRequest      Kind = "bad_request"      // another 4xx: the server refused what we sent
	KindTimeout         Kind = "timeout"          // no complete response within Options.Timeout
	KindConnection      Kind = "connection"       // refused, DNS, reset, TLS: nothing answered
	KindProtocol        Kind = "protocol"         // an answer that is not the provider's protocol
	KindPayloadRejected Kind = "payload_rejected" // CheckPayload refused the body (A10); nothing sent
	KindCanceled        Kind = "canceled"         // the caller's context ended
)

// Error is a failed model call. Its message says what happened and what to check; the fields
// are for programs (retry policies, tests, logs).
type Error struct {
	Provider string
	Kind     Kind
	// Status is the final HTTP status (0 when no response arrived).
	Status int
	// Message is the provider's own explanation, clipped and stripped of control characters.
	Message string
	// Type is the provider's error type or code (e.g. "rate_limit_error", "invalid_api_key").
	Type      string
	RequestID string
	// RetryAfter is what the server asked us to wait before trying again (0 if it did not say).
	RetryAfter time.Duration
	// Retryable says the same request may succeed later (rate limits, server failures,
	// timeouts, connection failures); the layer retried already, up to Options.MaxRetries.
	Retryable bool
	// Attempts is how many HTTP requests were sent (0 when none was).
	Attempts int
	// Err is the underlying error, when there is one.
	Err error

	hint string // what to do, rendered after the message
}

func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	b.WriteString(": ")
	b.WriteString(e.summary())
	if e.Status != 0 || e.Message != "" {
		b.WriteString(" (")
		if e.Status != 0 {
			fmt.Fprintf(&b, "HTTP %d", e.Status)
			if e.Message != "" {
				b.WriteString(": ")
			}
		}
		b.WriteString(e.Message)
		if e.RequestID != "" {
			b.WriteString("; request ")
			b.WriteString(e.RequestID)
		}
		b.WriteString(")")
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " after %d attempts", e.Attempts)
	}
	if e.hint != "" {
		b.WriteString("; ")
		b.WriteString(e.hint)
	}
	if e.Kind == KindPayloadRejected && e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) summary() string {
	switch e.Kind {
	case KindAuth:
		if e.Status == 403 {
			return "the API key is not allowed to do this"
		}
		return "the API key was rejected"
	case KindNotFound:
		return "not found"
	case KindRateLimit:
		return "rate limited"
	case KindServer:
		return "the server failed"
	case KindBadRequest:
		return "the server refused the request"
	case KindTimeout:
		return "timed out"
	case KindConnection:
		return "cannot reach the server"
	case KindProtocol:
		return "the response is not the provider's protocol"
	case KindPayloadRejected:
		return "model request refused before sending"
	case KindCanceled:
		return "canceled"
	}
	return "request failed"
}

// IsRetryable reports whether err is an *Error the same request may get past later.
func IsRetryable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Retryable
}

// clean makes a server-supplied string safe to print: bounded, one line, no control characters
// (a hostile server must not be able to paint the terminal or forge log lines).
func clean(s string, max int) string {
	s = strings.TrimSpace(s)
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n >= max {
			b.WriteString("…")
			break
		}
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			b.WriteByte(' ')
		case unicode.IsControl(r) || r == unicode.ReplacementChar || unicode.Is(unicode.Cf, r):
			continue
		default:
			b.WriteRune(r)
		}
		n++
	}
	return b.String()
}
