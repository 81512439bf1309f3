package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/schemahint"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// testConfig returns a config with workspace dir and every tool enabled.
func testConfig(dir string) *config.Config {
	cfg := &config.Config{Workspace: dir}
	cfg.Tools.Exec.Enabled = true
	cfg.Tools.WebFetch = config.WebFetch{Enabled: true, TimeoutMs: 5000, MaxBytes: 1 << 20, AllowPrivateNetworks: true}
	return cfg
}

// env is a workspace in a temp dir with its tools.
type env struct {
	t     *testing.T
	dir   string // the workspace root
	tools map[string]*api.Tool
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return newEnvConfig(t, testConfig(dir))
}

func newEnvConfig(t *testing.T, cfg *config.Config) *env {
	t.Helper()
	tools, err := Tools(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, dir: cfg.Workspace, tools: map[string]*api.Tool{}}
	for _, tool := range tools {
		e.tools[tool.Name] = tool
	}
	return e
}

// write creates a file under the workspace (parents included).
func (e *env) write(rel, content string) {
	e.t.Helper()
	p := filepath.Join(e.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) read(rel string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, filepath.FromSlash(rel)))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

func (e *env) exists(rel string) bool {
	_, err := os.Lstat(filepath.Join(e.dir, filepath.FromSlash(rel)))
	return err == nil
}

// call runs a tool with a JSON input. A successful result's details are validated against the
// tool's OutputSchema, exactly as the dispatcher does (O4).
func (e *env) call(name string, input any) (*api.Result, error) {
	e.t.Helper()
	return callTool(e.t, e.tools[name], input)
}

func callTool(t *testing.T, tool *api.Tool, input any) (*api.Result, error) {
	t.Helper()
	if tool == nil {
		t.Fatal("no such tool")
	}
	raw, ok := input.(string)
	if !ok {
		b, err := json.Marshal(input)
		if err != nil {
			t.Fatal(err)
		}
		raw = string(b)
	}
	res, err := tool.Execute(context.Background(), &api.Call{ToolID: tool.ID(), Input: json.RawMessage(raw)})
	if err != nil {
		return nil, err
	}
	if len(res.Content) != 1 || res.Content[0].Type != "text" {
		t.Fatalf("%s: content is not one text block: %+v", tool.Name, res.Content)
	}
	if err := validateDetails(tool, res.Details); err != nil {
		t.Fatalf("%s: details do not match the output schema: %v\n%s", tool.Name, err, res.Details)
	}
	return res, nil
}

// mustCall is call that fails the test on error and decodes the details into a map.
func (e *env) mustCall(name string, input any) map[string]any {
	e.t.Helper()
	res, err := e.call(name, input)
	if err != nil {
		e.t.Fatalf("%s(%v): %v", name, input, err)
	}
	var m map[string]any
	if err := json.Unmarshal(res.Details, &m); err != nil {
		e.t.Fatal(err)
	}
	return m
}

// callErr runs a tool that must fail and returns the error text.
func (e *env) callErr(name string, input any) string {
	e.t.Helper()
	res, err := e.call(name, input)
	if err == nil {
		e.t.Fatalf("%s(%v) succeeded: %s", name, input, res.Details)
	}
	return err.Error()
}

var (
	schemaMu    sync.Mutex
	schemaCache = map[string]*jsonschema.Schema{}
)

func compileSchema(id string, raw []byte) (*jsonschema.Schema, error) {
	schemaMu.Lock()
	defer schemaMu.Unlock()
	key := id + "\x00" + string(raw)
	if s, ok := schemaCache[key]; ok {
		return s, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	loc := "mem:///" + strings.ReplaceAll(id, ":", "/") + ".json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	s, err := c.Compile(loc)
	if err != nil {
		return nil, err
	}
	schemaCache[key] = s
	return s, nil
}

func validateDetails(tool *api.Tool, details json.RawMessage) error {
	s, err := compileSchema(tool.ID()+"/out", tool.OutputSchema)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(details))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}

func TestToolsList(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name      string
		exec, web bool
		want      []string
	}{
		{"defaults", false, false, []string{"read", "write", "edit", "apply_patch", "ls", "find", "grep"}},
		{"web", false, true, []string{"read", "write", "edit", "apply_patch", "ls", "find", "grep", "web_fetch"}},
		{"all", true, true, []string{"read", "write", "edit", "apply_patch", "ls", "find", "grep", "web_fetch", "exec"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &config.Config{Workspace: dir}
			cfg.Tools.Exec.Enabled = tc.exec
			cfg.Tools.WebFetch.Enabled = tc.web
			tools, err := Tools(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range tools {
				names = append(names, tool.Name)
			}
			if !slices.Equal(names, tc.want) {
				t.Fatalf("tools = %v, want %v", names, tc.want)
			}
		})
	}
}

func TestToolsMetadata(t *testing.T) {
	e := newEnv(t)
	readOnly := map[string]bool{"read": true, "ls": true, "find": true, "grep": true, "web_fetch": true}
	for name, tool := range e.tools {
		t.Run(name, func(t *testing.T) {
			if tool.ID() != "native:core:"+name || tool.Source != api.SourceNative || tool.Owner != "core" {
				t.Errorf("id %s source %s owner %s", tool.ID(), tool.Source, tool.Owner)
			}
			if tool.ReadOnly != readOnly[name] {
				t.Errorf("ReadOnly = %v", tool.ReadOnly)
			}
			if tool.Execute == nil || tool.Description == "" || tool.Label == "" {
				t.Error("missing Execute, Description or Label")
			}
			if n := strings.Count(tool.Description, ". "); n > 2 || len(tool.Description) > 400 {
				t.Errorf("description too long: %q", tool.Description)
			}
			for _, which := range []struct {
				kind string
				raw  json.RawMessage
			}{{"in", tool.InputSchema}, {"out", tool.OutputSchema}} {
				if _, err := compileSchema(tool.ID()+"/"+which.kind, which.raw); err != nil {
					t.Errorf("%s schema: %v", which.kind, err)
				}
				assertClosed(t, which.kind, which.raw)
			}
			// The output schema renders as a complete compact hint (O3) in the catalog's bound.
			s, err := schemahint.Parse(tool.OutputSchema)
			if err != nil {
				t.Fatal(err)
			}
			hint, ok := schemahint.OutputHint(s, 240)
			if !ok {
				t.Fatalf("output schema gives no compact hint")
			}
			t.Logf("%s -> %s", name, hint)
			in, err := schemahint.Parse(tool.InputSchema)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s <- %s", name, schemahint.InputHint(in, 240))
		})
	}
}

// assertClosed checks that every object layer of a schema says additionalProperties: false
// and lists all its properties as required in output schemas (except web_fetch's title).
func assertClosed(t *testing.T, kind string, raw json.RawMessage) {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var walk func(string, any)
	walk = func(at string, v any) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		if m["type"] == "object" {
			if m["additionalProperties"] != false {
				t.Errorf("%s schema %s: object without additionalProperties:false", kind, at)
			}
			props, _ := m["properties"].(map[string]any)
			if kind == "out" {
				req, _ := m["required"].([]any)
				for name := range props {
					if name != "title" && !slices.Contains(req, any(name)) {
						t.Errorf("out schema %s: %s is not required", at, name)
					}
				}
			}
			for name, p := range props {
				walk(at+"."+name, p)
			}
		}
		if items, ok := m["items"]; ok {
			walk(at+"[]", items)
		}
	}
	walk("$", v)
}

func TestToolsWorkspaceErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ws := range []string{filepath.Join(dir, "missing"), file} {
		if _, err := Tools(&config.Config{Workspace: ws}); err == nil {
			t.Errorf("Tools(workspace %s) succeeded", ws)
		}
	}
	if _, err := Tools(nil); err == nil {
		t.Error("Tools(nil) succeeded")
	}
}

func TestToolsRelativeWorkspace(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.txt"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, ws := range []string{"", "."} {
		e := newEnvConfig(t, &config.Config{Workspace: ws})
		if got := e.mustCall("read", map[string]any{"path": "x.txt"})["content"]; got != "hi\n" {
			t.Errorf("workspace %q: read = %q", ws, got)
		}
	}
}

func TestDecodeInput(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "a\n")
	tests := []struct {
		tool, input, want string
	}{
		{"read", `{"path":"a.txt","bogus":1}`, `unknown field "bogus"`},
		{"read", `{"Path":"a.txt"}`, `unknown field "Path"`},
		{"read", `{"path":7}`, `field "path" must be a string, not number`},
		{"read", `{"path":"a.txt","offset":"2"}`, `field "offset" must be an integer, not string`},
		{"read", `{"path":"a.txt","offset":1.5}`, `field "offset" must be an integer`},
		{"read", `{"path":"a.txt","offset":0}`, `offset must be between 1`},
		{"read", `["a.txt"]`, `input must be a JSON object`},
		{"read", `{"path":"a.txt"} {}`, `not a valid JSON object`},
		{"read", `{"path":`, `not a valid JSON object`},
		{"read", `{}`, `path is required`},
		{"read", `null`, `path is required`},
		{"write", `{"path":"b.txt"}`, `content is required`},
		{"write", `{"path":"b.txt","content":"x","createDirs":"yes"}`, `field "createDirs" must be a boolean`},
		{"edit", `{"path":"a.txt","oldText":"","newText":"b"}`, `oldText is required`},
		{"edit", `{"path":"a.txt","oldText":"a","newText":"a"}`, `identical`},
		{"ls", `{"path":["."]}`, `field "path" must be a string, not array`},
		{"find", `{}`, `pattern is required`},
		{"find", `{"pattern":"*","limit":0}`, `limit must be between 1 and 10000`},
		{"grep", `{"pattern":"("}`, `invalid regular expression`},
		{"apply_patch", `{"patch":""}`, `patch is required`},
		{"exec", `{"command":"true","timeoutMs":600001}`, `timeoutMs must be between 1 and 600000`},
		{"exec", `{"command":" "}`, `command is required`},
		{"web_fetch", `{"url":"ftp://example.com/"}`, `only http and https`},
		{"web_fetch", `{"url":"http://x","maxBytes":0}`, `maxBytes must be at least 1`},
		{"web_fetch", `{"url":"http:///path"}`, `no host`},
	}
	for _, tc := range tests {
		t.Run(tc.tool+" "+tc.input, func(t *testing.T) {
			got := e.callErr(tc.tool, tc.input)
			if !strings.Contains(got, tc.want) || !strings.HasPrefix(got, tc.tool+": ") {
				t.Errorf("error %q, want it to start with %q and contain %q", got, tc.tool+": ", tc.want)
			}
		})
	}
}

// jsonString marshals v (map keys sorted).
func jsonString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
