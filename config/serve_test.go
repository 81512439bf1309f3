package config

import (
	"reflect"
	"testing"
	"time"
)

func TestServeHTTP(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want ServeHTTP
	}{
		{"defaults", `{}`, ServeHTTP{SessionIdleTimeoutSeconds: 1800, MaxSessions: 1024}},
		{"everything", `{serve: {http: {token: "0123456789abcdef", allowedOrigins: ["HTTPS://App.Example:443", "http://x.example:8080"],
			allowedHosts: ["MCP.example", "mcp.example:8443"], sessionIdleTimeoutSeconds: 60, maxSessions: 5}}}`,
			ServeHTTP{Token: "0123456789abcdef", AllowedOrigins: []string{"https://app.example", "http://x.example:8080"},
				AllowedHosts: []string{"mcp.example", "mcp.example:8443"}, SessionIdleTimeoutSeconds: 60, MaxSessions: 5}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := mustParse(t, c.src).Serve.HTTP
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
	if d := Default().Serve.HTTP.SessionIdleTimeout(); d != 30*time.Minute {
		t.Fatalf("default idle timeout %v", d)
	}
}

func TestRuntimeLimits(t *testing.T) {
	cases := []struct {
		name string
		src  string
		adm  Admission
		susp Suspended
	}{
		{"defaults", `{}`, Admission{}, Suspended{MaxRunsPerSession: 16, MaxBytes: 1 << 30, MaxBytesPerSession: 256 << 20}},
		{"set", `{runtime: {admission: {maxRunning: 3, maxQueued: 7, memoryBudgetBytes: 1e9}, suspended: {maxRunsPerSession: 2, maxBytes: 1048576, maxBytesPerSession: 1048576}}}`,
			Admission{MaxRunning: 3, MaxQueued: 7, MemoryBudgetBytes: 1e9}, Suspended{MaxRunsPerSession: 2, MaxBytes: 1 << 20, MaxBytesPerSession: 1 << 20}},
		{"no queue", `{runtime: {admission: {maxQueued: 0}}}`, Admission{MaxQueued: -1}, Suspended{MaxRunsPerSession: 16, MaxBytes: 1 << 30, MaxBytesPerSession: 256 << 20}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := mustParse(t, c.src).Runtime
			if r.Admission != c.adm || r.Suspended != c.susp {
				t.Fatalf("got %+v %+v\nwant %+v %+v", r.Admission, r.Suspended, c.adm, c.susp)
			}
		})
	}
	if d := Default().Runtime; d.Suspended.MaxRunsPerSession != 16 || d.Admission != (Admission{}) {
		t.Fatalf("default.json5 runtime %+v", d)
	}
}

func TestCheckToken(t *testing.T) {
	for tok, ok := range map[string]bool{"0123456789abcdef": true, "short": false, "0123456789 abcdef": false, "0123456789abcdé€": false} {
		if got := CheckToken(tok) == ""; got != ok {
			t.Errorf("CheckToken(%q) ok=%v, want %v", tok, got, ok)
		}
	}
}
