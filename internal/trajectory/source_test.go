package trajectory

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
)

func TestMaskSource(t *testing.T) { // issue 22 item 7
	cases := []struct{ in, want string }{
		{`API_TOKEN = "plainvalue12345"`, `API_TOKEN = "[redacted]"`},
		{`const password = 'hunter2hunter2'; const user = "bob"`, `const password = '[redacted]'; const user = "bob"`},
		{`const cfg = {apiKey: "k-1", "client_secret": "s", user: "u"}`, `const cfg = {apiKey: "[redacted]", "client_secret": "[redacted]", user: "u"}`},
		{"headers.Authorization = `Bearer abc`", "headers.Authorization = `[redacted]`"},
		{`if (token === "letmein") x()`, `if (token === "[redacted]") x()`},
		{`this.#secret = "s3"`, `this.#secret = "[redacted]"`},
		{`let accessToken; accessToken ??= "fallback"`, `let accessToken; accessToken ??= "[redacted]"`},
		// Not literals, not credential names, names that only contain a word: unchanged.
		{`const token = await getToken(); const tokens = ["a"]; const tokenizer = "bpe"`, `const token = await getToken(); const tokens = ["a"]; const tokenizer = "bpe"`},
		{"const password = `${a}b`", "const password = `${a}b`"},
		{`const password = ""`, `const password = ""`},
		// Strings, comments and regular expressions that mention a name are not assignments.
		{`// password = "x"` + "\n" + `const s = "token = 'y'"; const r = /secret = "z"/`, `// password = "x"` + "\n" + `const s = "token = 'y'"; const r = /secret = "z"/`},
		{`const a = 1 / 2, secret = "q"`, `const a = 1 / 2, secret = "[redacted]"`},
	}
	for _, c := range cases {
		if got := MaskSource(c.in); got != c.want {
			t.Errorf("MaskSource(%s)\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}

func TestSanitizeMasksExecSource(t *testing.T) {
	in := json.RawMessage(`{"language":"javascript","code":"const API_TOKEN = \"plainvalue12345\"; return 1"}`)
	ev := Sanitize(api.TrajectoryEvent{Kind: api.EventControl, Tool: "exec", Input: in, OriginalInput: in})
	for _, b := range []json.RawMessage{ev.Input, ev.OriginalInput} {
		if bytes.Contains(b, []byte("plainvalue12345")) || !bytes.HasPrefix(b, []byte(`{"language":"javascript","code":"const API_TOKEN = \"[redacted]\"`)) {
			t.Fatalf("%s", b)
		}
	}
	// A nested call's input is not code: its keys are redacted by name as before.
	ev = Sanitize(api.TrajectoryEvent{Kind: api.EventNested, Tool: "native:core:x", Input: json.RawMessage(`{"code":"password = \"x1\""}`)})
	if string(ev.Input) != `{"code":"password = \"x1\""}` {
		t.Fatalf("%s", ev.Input)
	}
}

func TestRegisteredSecrets(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.AddSecrets("short", `quo"ted-secret-value`, "plain-registered-1")
	w.Record(api.TrajectoryEvent{Kind: api.EventNested, Tool: "t", Error: `failed with plain-registered-1 and quo"ted-secret-value; short is fine`})
	out := buf.String()
	if strings.Contains(out, "plain-registered-1") || strings.Contains(out, "ted-secret-value") || !strings.Contains(out, "short is fine") || !json.Valid([]byte(out)) {
		t.Fatalf("%s", out)
	}
	// A secret that spells JSON structure would break the line: the event is dropped instead.
	buf.Reset()
	w.AddSecrets(`"kind":"nested",`)
	w.Record(api.TrajectoryEvent{Kind: api.EventNested, Tool: "t"})
	if !json.Valid(buf.Bytes()) || !strings.Contains(buf.String(), `"kind":"dropped"`) {
		t.Fatalf("%s", buf.String())
	}
}

func TestConfigSecrets(t *testing.T) {
	t.Setenv("CODEMODE_TEST_API_KEY", "env-api-key-value")
	t.Setenv("CODEMODE_TEST_PLAIN", "not-a-secret-value")
	t.Setenv("CODEMODE_TEST_REDIS_PW", "redis-password-1")
	t.Setenv("CODEMODE_TEST_SEAL", strings.Repeat("5e", 32))
	t.Setenv("CODEMODE_TEST_ALICE", "alice-token-0123456789")
	cfg, err := config.Parse([]byte(`{mcp: {servers: {
		gh: {command: "x", env: {GITHUB_TOKEN: "ghs-token-value", PATHX: "/usr/local/bin"}},
		web: {url: "https://h.example/mcp", headers: {Authorization: "Bearer header-token-value", Accept: "application/json"}}}},
		serve: {principals: [{name: "alice", token: {env: "CODEMODE_TEST_ALICE"}}]},
		runStore: {redis: {url: "redis://127.0.0.1:6379/0", password: {env: "CODEMODE_TEST_REDIS_PW"}, keyEnv: "CODEMODE_TEST_SEAL"}}}`), "t.json5")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(ConfigSecrets(cfg), "\n")
	for _, want := range []string{"ghs-token-value", "Bearer header-token-value", "header-token-value", "redis-password-1",
		"env-api-key-value", strings.Repeat("5e", 32), "alice-token-0123456789"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q", want)
		}
	}
	for _, not := range []string{"/usr/local/bin", "application/json", "not-a-secret-value"} {
		if strings.Contains(got, not) {
			t.Errorf("%q is not a secret", not)
		}
	}
}

// FuzzMaskSource: masking never panics, and changes only the insides of string literals (the
// code around them is kept byte for byte).
func FuzzMaskSource(f *testing.F) {
	for _, s := range []string{`const password = "x"`, "token = `a`", `a = /password = "x"/; secret: 'y'`, `"\u0000`, "`${", `#secret="q"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, code string) {
		out := MaskSource(code)
		if out == code {
			return
		}
		if !strings.Contains(out, redacted) {
			t.Fatalf("changed without masking: %q -> %q", code, out)
		}
		if len(strings.ReplaceAll(out, redacted, "")) > len(code) {
			t.Fatalf("masking added code: %q -> %q", code, out)
		}
	})
}

func TestTraceShowsTitle(t *testing.T) { // issue 22 item 9
	var b strings.Builder
	Render(&b, []api.TrajectoryEvent{{Kind: api.EventControl, Tool: "exec", CallID: "c1", Title: "Count the open issues", Status: "completed"}}, RenderOptions{})
	if !strings.Contains(b.String(), `exec c1 "Count the open issues"  completed`) {
		t.Fatalf("%s", b.String())
	}
}
