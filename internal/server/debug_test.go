package server

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// An unknown CODEMODE_DEBUG_MODEL_PAYLOAD value is said, not silently ignored (issue 24).
func TestDebugPayloadValues(t *testing.T) {
	for _, tc := range []struct{ v, want, warn string }{
		{"", "", ""}, {"tools", "tools", ""}, {"FULL-REDACTED", "full-redacted", ""}, {"off", "", ""},
		{"bogus", "", "neither"},
	} {
		t.Setenv("CODEMODE_DEBUG_MODEL_PAYLOAD", tc.v)
		var buf bytes.Buffer
		d := debugFromEnv(slog.New(slog.NewTextHandler(&buf, nil)))
		if d.payload != tc.want {
			t.Errorf("%q: payload %q, want %q", tc.v, d.payload, tc.want)
		}
		if got := buf.String(); (tc.warn == "") != (got == "") || !strings.Contains(got, tc.warn) {
			t.Errorf("%q: log %q, want a warning containing %q", tc.v, got, tc.warn)
		}
	}
}
