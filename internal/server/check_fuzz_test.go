package server

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzCheckMessage: hostile request bodies never panic the endpoint's pre-check; when it swaps
// an id, the body stays valid JSON with our id in place, and the response envelope gets the
// client's id back byte for byte (issue 18 item 8).
func FuzzCheckMessage(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"jsonrpc":"2.0","id":1.5e308,"method":"ping"}`, `{"jsonrpc":"2.0","id":"\u0041","method":"x"}`,
		`{"jsonrpc":"2.0", "id" : 1.0 ,"method":"ping","params":{"requestId":1e3}}`, `{"id":1,"id":2,"jsonrpc":"2.0","method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}`, `[[[[[[[[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > 1<<16 {
			return
		}
		c := checkMessage(body)
		_ = jsonDepth(body)
		if c.parseError != "" || c.invalid != "" || c.id == nil || c.method == "" || idRoundTrips(c.id) {
			return
		}
		ours := json.RawMessage(`"codemode-id-x"`)
		out := replaceID(body, c.idAt, len(c.id), ours)
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if !json.Valid(out) || json.Unmarshal(out, &m) != nil || !bytes.Equal(m.ID, ours) {
			t.Fatalf("swapping the id of %q gave %q", body, out)
		}
		resp := append(append([]byte(`{"jsonrpc":"2.0","id":`), ours...), `,"result":{}}`...)
		back := fixEnvelope(resp, ours, c.id)
		if !bytes.HasPrefix(back, append([]byte(`{"jsonrpc":"2.0","id":`), c.id...)) {
			t.Fatalf("restoring %q gave %q", c.id, back)
		}
	})
}

// FuzzFixEnvelope: whatever the SDK writes, the response fixer never panics and leaves bytes
// that are not a response envelope alone.
func FuzzFixEnvelope(f *testing.F) {
	f.Add([]byte(`data: {"jsonrpc":"2.0","id":1,"error":{"code":0,"message":"x"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"a\"b","error":{"code":0,"message":"x"}}`))
	f.Add([]byte(`event: message`))
	f.Fuzz(func(t *testing.T, b []byte) {
		out := fixEnvelope(b, nil, nil)
		if !bytes.Contains(b, []byte(`{"jsonrpc":"2.0","id":`)) && !bytes.Equal(out, b) {
			t.Fatalf("changed %q into %q", b, out)
		}
	})
}
