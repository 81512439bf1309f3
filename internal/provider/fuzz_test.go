package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
)

// FuzzToolNames checks the fast gjson reader against encoding/json, which the servers' own
// decoders resemble: wherever the body has no duplicated keys on the way to a name, both must
// find the same names.
func FuzzToolNames(f *testing.F) {
	f.Add([]byte(`{"tools":[{"type":"function","function":{"name":"exec"}},{"name":"wait"}]}`))
	f.Add([]byte(`{"tools":[{"custom":{"name":"x"}},{}],"tools":null}`))
	f.Add([]byte(`{"tools":[{"name":"\u0065x\"ec"}],"model":"m"}`))
	f.Add([]byte(`[]`))
	f.Add([]byte{})
	f.Add([]byte(`{"tools":[{"nAme":"x"},{"function":null,"name":"y"}]}`)) // keys match exactly
	f.Fuzz(func(t *testing.T, body []byte) {
		names, err := toolNames(body)
		if len(body) == 0 {
			// The parser's contract: a request without a body carries no tools (nil, nil).
			// encoding/json refuses an empty document, so it is no reference here.
			if names != nil || err != nil {
				t.Fatalf("empty body: %q, %v", names, err)
			}
			return
		}
		want, werr := toolNamesStd(body)
		if err != nil {
			return // refused: fail closed
		}
		if werr != nil {
			t.Fatalf("gjson accepted what encoding/json refuses (%v): %q", werr, body)
		}
		if !slices.Equal(names, want) {
			t.Fatalf("gjson %q, encoding/json %q for %q", names, want, body)
		}
	})
}

// toolNamesStd is the reference reading with encoding/json. It decodes into maps, whose keys
// match exactly: decoding into a struct would match "nAme" as "name" (encoding/json folds case),
// which no API server does.
func toolNamesStd(body []byte) ([]string, error) {
	var b map[string]json.RawMessage
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, err
	}
	names := []string{}
	raw, ok := b["tools"]
	if !ok || string(raw) == "null" {
		return names, nil
	}
	var tools []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &tools); err != nil {
		return nil, err
	}
	str := func(raw json.RawMessage) string {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
next:
	for _, t := range tools {
		for _, wrapper := range []string{"function", "custom"} {
			if w, ok := t[wrapper]; ok && string(w) != "null" {
				var m map[string]json.RawMessage
				if err := json.Unmarshal(w, &m); err != nil {
					return nil, err
				}
				names = append(names, str(m["name"]))
				continue next
			}
		}
		names = append(names, str(t["name"]))
	}
	return names, nil
}

// FuzzRedactedSnapshot: bounded output, and a secret never appears whole.
func FuzzRedactedSnapshot(f *testing.F) {
	f.Add([]byte(`{"a":"sk-abcdefghijklmnopqrstuvwx","b":[1,2,{"api_key":"zz"}]}`), "secretkey1")
	f.Add([]byte(`not json secretkey1 \x00 Bearer abcdefghijkl`), "secretkey1")
	f.Add([]byte(`{"secretkey1":"secretkey1secretkey1"}`), "secretkey1")
	f.Fuzz(func(t *testing.T, body []byte, secret string) {
		const limit = 1024
		out := redactedSnapshot(body, secret, limit)
		if len(out) > limit {
			t.Fatalf("snapshot of %d bytes", len(out))
		}
		if checkable(secret) && strings.Contains(out, secret) {
			t.Fatalf("secret %q in %q", secret, out)
		}
	})
}

// checkable: a secret that cannot be formed by the JSON syntax or the markers around it.
func checkable(s string) bool {
	if len(s) < 8 || strings.Contains("[redacted]…[ more bytes][too deep]", s) {
		return false
	}
	letter := false
	for _, r := range s {
		if r > unicode.MaxASCII || !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return false
		}
		letter = letter || unicode.IsLetter(r) && r != 'e' && r != 'E'
	}
	return letter
}

func FuzzSSETap(f *testing.F) {
	f.Add([]byte("event: message_start\ndata: {\"a\":1}\n\ndata: [DONE]\n\n"), uint8(3))
	f.Add([]byte("data: x\r\ndata: y\r\n\r\n: comment\n\nevent:\n\n"), uint8(1))
	f.Fuzz(func(t *testing.T, stream []byte, step uint8) {
		var logs logBuffer
		for _, mode := range []string{DebugSSEEvents, DebugSSEPeek} {
			c := &call{s: &settings{Options: Options{Logger: logs.logger(), Debug: DebugOptions{SSE: mode}}}, provider: "p"}
			tap := &sseTap{c: c, peek: mode == DebugSSEPeek}
			n := int(step%64) + 1
			for p := stream; len(p) > 0; {
				k := min(n, len(p))
				tap.feed(p[:k])
				p = p[k:]
				if len(tap.line) > maxSSELine || len(tap.data) > peekData+1 {
					t.Fatalf("tap holds %d line bytes, %d data bytes", len(tap.line), len(tap.data))
				}
			}
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// FuzzResponse feeds arbitrary bodies to both providers' response paths (JSON and SSE). The
// call must end in a Response or an *Error, never a panic; every tool call is either a JSON
// object or says why not.
func FuzzResponse(f *testing.F) {
	f.Add(false, false, 200, []byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi","tool_calls":[{"id":"c","type":"function","function":{"name":"exec","arguments":"{"}}]},"finish_reason":"tool_calls"}]}`))
	f.Add(true, false, 200, []byte(`{"id":"m","type":"message","role":"assistant","content":[{"type":"tool_use","id":"t","name":"exec","input":"x"}],"stop_reason":"tool_use"}`))
	f.Add(false, true, 200, []byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":5,\"function\":{\"arguments\":\"{\"}}]},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"))
	f.Add(true, true, 200, []byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"type\":\"message\",\"content\":[]}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":3}\n\n"))
	f.Add(false, false, 429, []byte(`{"error":{"message":"slow"}}`))
	f.Fuzz(func(t *testing.T, anthropic, stream bool, status int, body []byte) {
		if status < 100 || status > 599 {
			status = 200
		}
		ct := "application/json"
		if stream && status < 300 {
			ct = "text/event-stream"
		}
		hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {ct}}, Body: io.NopCloser(bytes.NewReader(body)), Request: r}, nil
		})}
		p := OpenAI
		if anthropic {
			p = Anthropic
		}
		c, err := New(Options{Provider: p, BaseURL: "http://fuzz.invalid/v1", HTTPClient: hc, Stream: stream, MaxRetries: -1,
			Timeout: 5 * time.Second, MaxResponseBytes: 1 << 16})
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Complete(context.Background(), hi)
		if err != nil {
			var e *Error
			if !asError(err, &e) {
				t.Fatalf("error is not an *Error: %v", err)
			}
			return
		}
		for _, tc := range res.ToolCalls {
			if tc.Malformed == "" && !json.Valid(tc.Arguments) || tc.Malformed != "" && tc.Arguments != nil {
				t.Fatalf("tool call %+v", tc)
			}
		}
	})
}

func asError(err error, e **Error) bool {
	x, ok := err.(*Error)
	*e = x
	return ok
}
