package provider

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestBoundedBody(t *testing.T) {
	for _, tc := range []struct {
		body  string
		limit int64
		err   error
	}{
		{"0123456789", 10, nil},
		{"0123456789", 11, nil},
		{"0123456789x", 10, errTooLarge},
		{"", 1, nil},
	} {
		for _, wrap := range []func(io.Reader) io.Reader{func(r io.Reader) io.Reader { return r }, iotest.OneByteReader, iotest.DataErrReader} {
			c := &call{s: &settings{}}
			b := &boundedBody{rc: io.NopCloser(wrap(strings.NewReader(tc.body))), left: tc.limit, c: c}
			got, err := io.ReadAll(b)
			if !errors.Is(err, tc.err) || tc.err == nil && string(got) != tc.body || int64(len(got)) > tc.limit {
				t.Errorf("%q limit %d: got %q, %v", tc.body, tc.limit, got, err)
			}
			if string(c.head) != tc.body[:min(len(tc.body), int(tc.limit))] {
				t.Errorf("head = %q", c.head)
			}
		}
	}
}

func TestRetryAfter(t *testing.T) {
	future := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	for _, tc := range []struct {
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{http.Header{}, 0, false},
		{http.Header{"Retry-After": {"3"}}, 3 * time.Second, true},
		{http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond, true},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond, true},
		{http.Header{"Retry-After": {"-1"}}, 0, false},
		{http.Header{"Retry-After": {"1e400"}}, 0, false},
		{http.Header{"Retry-After": {"1e300"}}, time.Duration(1<<63 - 1), true},
		{http.Header{"Retry-After": {"soon"}}, 0, false},
	} {
		got, ok := retryAfter(tc.h)
		if got != tc.want || ok != tc.ok {
			t.Errorf("retryAfter(%v) = %v, %v; want %v, %v", tc.h, got, ok, tc.want, tc.ok)
		}
	}
	if got, ok := retryAfter(http.Header{"Retry-After": {future}}); !ok || got < 80*time.Second || got > 91*time.Second {
		t.Errorf("HTTP date: %v, %v", got, ok)
	}
}

func TestErrorMessage(t *testing.T) {
	for body, want := range map[string]string{
		`{"error":{"message":"bad key","type":"x"}}`:    "bad key",
		`{"error":"model 'llama9' not found"}`:          "model 'llama9' not found",
		`{"object":"error","message":"vllm says no"}`:   "vllm says no",
		`{"detail":"Not Found"}`:                        "Not Found",
		`{"weird":1,"also":2}`:                          "a JSON body with keys [also weird]",
		"<html><title>502 Bad Gateway</title></html>\n": "502 Bad Gateway",
	} {
		if got := errorMessage([]byte(body)); got != want {
			t.Errorf("errorMessage(%s) = %q, want %q", body, got, want)
		}
	}
}

func TestClean(t *testing.T) {
	if got := clean("a\x1b[31mb\nc\u202ed\x00"+strings.Repeat("x", 20), 10); got != "a[31mb cdx…" {
		t.Errorf("clean = %q", got)
	}
}
