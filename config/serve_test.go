package config

import (
	"reflect"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
)

func TestServeHTTP(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want ServeHTTP
	}{
		{"defaults", `{}`, ServeHTTP{SessionIdleTimeoutSeconds: 1800, MaxSessions: 1024, MaxSessionsPerClient: 256, ReadHeaderTimeoutSeconds: 10,
			ReadBodyTimeoutSeconds: 30, IdleTimeoutSeconds: 120, MaxConnections: 4096, MaxConnectionsPerClient: 256}},
		{"everything", `{serve: {http: {token: "0123456789abcdef", allowedOrigins: ["HTTPS://App.Example:443", "http://x.example:8080"],
			allowedHosts: ["MCP.example", "mcp.example:8443"], sessionIdleTimeoutSeconds: 60, maxSessions: 5,
			maxSessionsPerClient: 2, readHeaderTimeoutSeconds: 2, readBodyTimeoutSeconds: 3, idleTimeoutSeconds: 4, maxConnections: 5,
			maxConnectionsPerClient: 0, requestStateKey: {env: "STATE_KEY"},
			tls: {certFile: "/etc/tls/tls.crt", keyFile: "/etc/tls/tls.key"}}}}`,
			ServeHTTP{Token: "0123456789abcdef", AllowedOrigins: []string{"https://app.example", "http://x.example:8080"},
				AllowedHosts: []string{"mcp.example", "mcp.example:8443"}, SessionIdleTimeoutSeconds: 60, MaxSessions: 5,
				MaxSessionsPerClient: 2, ReadHeaderTimeoutSeconds: 2, ReadBodyTimeoutSeconds: 3, IdleTimeoutSeconds: 4, MaxConnections: 5,
				MaxConnectionsPerClient: 0, RequestStateKey: Secret{Env: "STATE_KEY"},
				TLS: &ServeTLS{CertFile: "/etc/tls/tls.crt", KeyFile: "/etc/tls/tls.key"}}},
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
		{"defaults", `{}`, Admission{}, Suspended{}},
		{"set", `{runtime: {admission: {maxRunning: 3, maxQueued: 7, memoryBudgetBytes: 1e9}, suspended: {maxRuns: 9, maxRunsPerPrincipal: 5, maxRunsPerSession: 2, maxBytes: 4194304, maxBytesPerPrincipal: 2097152, maxBytesPerSession: 1048576}}}`,
			Admission{MaxRunning: 3, MaxQueued: 7, MemoryBudgetBytes: 1e9}, Suspended{MaxRuns: 9, MaxRunsPerPrincipal: 5, MaxRunsPerSession: 2, MaxBytes: 4 << 20, MaxBytesPerPrincipal: 2 << 20, MaxBytesPerSession: 1 << 20}},
		{"no queue", `{runtime: {admission: {maxQueued: 0}}}`, Admission{MaxQueued: -1}, Suspended{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := mustParse(t, c.src).Runtime
			if r.Admission != c.adm || r.Suspended != c.susp {
				t.Fatalf("got %+v %+v\nwant %+v %+v", r.Admission, r.Suspended, c.adm, c.susp)
			}
		})
	}
	if d := Default().Runtime; d.Suspended != (Suspended{MaxRunsPerSession: 16, MaxBytesPerSession: 256 << 20}) || d.Admission != (Admission{}) {
		t.Fatalf("default.json5 runtime %+v", d)
	}
}

// issue 18 item 5, issue 20 item 2: the derived defaults, from the memory budget.
func TestSuspendedResolve(t *testing.T) {
	cases := []struct {
		name   string
		in     Suspended
		budget int64
		want   Suspended
	}{
		{"2 GiB machine (1 GiB budget)", Suspended{MaxRunsPerSession: 16, MaxBytesPerSession: 256 << 20}, 1 << 30,
			Suspended{MaxRuns: 1024, MaxRunsPerPrincipal: 256, MaxRunsPerSession: 16, MaxBytes: 256 << 20, MaxBytesPerPrincipal: 128 << 20, MaxBytesPerSession: 128 << 20}},
		{"24 GiB machine (12 GiB budget)", Suspended{}, 12 << 30,
			Suspended{MaxRuns: 12288, MaxRunsPerPrincipal: 3072, MaxRunsPerSession: 16, MaxBytes: 3 << 30, MaxBytesPerPrincipal: 1536 << 20, MaxBytesPerSession: 256 << 20}},
		{"tiny budget", Suspended{}, 16 << 20,
			Suspended{MaxRuns: 1024, MaxRunsPerPrincipal: 256, MaxRunsPerSession: 16, MaxBytes: 64 << 20, MaxBytesPerPrincipal: 32 << 20, MaxBytesPerSession: 32 << 20}},
		{"explicit figures stay", Suspended{MaxRuns: 10, MaxRunsPerPrincipal: 4, MaxRunsPerSession: 2, MaxBytes: 8 << 20, MaxBytesPerPrincipal: 4 << 20, MaxBytesPerSession: 2 << 20}, 1 << 40,
			Suspended{MaxRuns: 10, MaxRunsPerPrincipal: 4, MaxRunsPerSession: 2, MaxBytes: 8 << 20, MaxBytesPerPrincipal: 4 << 20, MaxBytesPerSession: 2 << 20}},
		{"a small maxRuns caps the principal's share", Suspended{MaxRuns: 100}, 1 << 30,
			Suspended{MaxRuns: 100, MaxRunsPerPrincipal: 100, MaxRunsPerSession: 16, MaxBytes: 256 << 20, MaxBytesPerPrincipal: 128 << 20, MaxBytesPerSession: 128 << 20}},
	}
	for _, c := range cases {
		if got := c.in.Resolve(c.budget); got != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
	// With the defaults, 5 sessions × 16 suspended runs fit (one principal, a 1 GiB budget).
	d := Default().Runtime.Suspended.Resolve(1 << 30)
	if 5*d.MaxRunsPerSession > d.MaxRunsPerPrincipal || 5*16 > d.MaxRuns {
		t.Fatalf("defaults %+v do not fit 5 × 16 runs", d)
	}
}

// TestPrincipals: serve.principals and serve.oauth decode into what the listener needs (issue 19
// items 3 and 4).
func TestPrincipals(t *testing.T) {
	cfg := mustParse(t, `{serve: {
		principals: [
			{name: "ci", token: {env: "TOKEN_CI"}, tools: {allow: ["native:core:*"], deny: ["native:core:write"],
			 directOnly: ["screenshot"], approvals: ["mcp:*:delete*"]}, maxRunning: 4},
			{name: "ops"},
		],
		oauth: {issuer: "https://auth.example", resource: "https://mcp.example/mcp", jwksUrl: "https://auth.example/jwks",
			scopes: ["mcp"], principals: [{claim: "groups", value: "ops", principal: "ops"}, {scope: "ci", principal: "ci"}]},
	}}`)
	want := []Principal{
		{Name: "ci", Token: Secret{Env: "TOKEN_CI"}, MaxRunning: 4, Tools: PrincipalTools{Allow: []string{"native:core:*"},
			Deny: []string{"native:core:write"}, DirectOnly: []string{"screenshot"},
			Approvals: api.Approvals{Rules: []api.ApprovalRule{{Match: "mcp:*:delete*"}}}}},
		{Name: "ops"},
	}
	if !reflect.DeepEqual(cfg.Serve.Principals, want) {
		t.Fatalf("principals %+v\nwant %+v", cfg.Serve.Principals, want)
	}
	o := cfg.Serve.OAuth
	if o == nil || o.Issuer != "https://auth.example" || o.ClockSkew() != time.Minute || o.PrincipalClaim != "sub" ||
		!reflect.DeepEqual(o.Principals, []OAuthRule{{Claim: "groups", Value: "ops", Principal: "ops"}, {Scope: "ci", Principal: "ci"}}) {
		t.Fatalf("oauth %+v", o)
	}
	if Default().Serve.OAuth != nil || Default().Serve.Principals != nil {
		t.Fatal("the default has principals or oauth")
	}
}

func TestServeTrajectory(t *testing.T) { // issue 18 item 6: a path, or the path and its limits
	cases := []struct {
		src   string
		path  string
		limit TrajectoryLimits
	}{
		{`{}`, "", TrajectoryLimits{}},
		{`{serve: {trajectory: "a.jsonl"}}`, "a.jsonl", TrajectoryLimits{}},
		{`{serve: {trajectory: {path: "b.jsonl", maxBytes: 1048576, maxFiles: 2, maxEventsPerCall: 500, updateIntervalMs: 250}}}`,
			"b.jsonl", TrajectoryLimits{MaxBytes: 1 << 20, MaxFiles: 2, MaxEventsPerCall: 500, UpdateIntervalMs: 250}},
		{`{serve: {trajectory: {path: "c.jsonl"}}}`, "c.jsonl", TrajectoryLimits{}}, // zero: the defaults
	}
	for _, c := range cases {
		s := mustParse(t, c.src).Serve
		if s.Trajectory != c.path || s.TrajectoryLimits != c.limit {
			t.Errorf("%s: %q %+v", c.src, s.Trajectory, s.TrajectoryLimits)
		}
	}
}
