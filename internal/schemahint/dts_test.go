package schemahint

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/evanw/esbuild/pkg/api"
)

// checkTS parses src as TypeScript with esbuild. Declarations compile to no
// JavaScript at all, so any output means text escaped into code.
func checkTS(t testing.TB, name, src string) {
	t.Helper()
	res := api.Transform(src, api.TransformOptions{Loader: api.LoaderTS})
	for _, m := range res.Errors {
		line := ""
		if m.Location != nil {
			line = m.Location.LineText
			t.Errorf("%s:%d:%d: %s\n  %s", name, m.Location.Line, m.Location.Column, m.Text, line)
		} else {
			t.Errorf("%s: %s", name, m.Text)
		}
	}
	if js := strings.TrimSpace(string(res.Code)); js != "" && len(res.Errors) == 0 {
		t.Errorf("%s: declarations produced JavaScript:\n%s", name, js)
	}
}

// span kinds of tsSpans.
const (
	spanCode = iota
	spanComment
	spanString
)

// tsSpans classifies every byte of a declaration file as code, comment or
// string literal, the way a JavaScript lexer would (U+2028/U+2029 end a
// line comment; there are no regex or template literals in declarations).
// problem describes an unterminated string or comment.
func tsSpans(src string) (kinds []byte, problem string) {
	kinds = make([]byte, len(src))
	for i := 0; i < len(src); {
		switch {
		case strings.HasPrefix(src[i:], "//"):
			j := i
			for j < len(src) {
				r, size := utf8.DecodeRuneInString(src[j:])
				if r == '\n' || r == '\r' || r == 0x2028 || r == 0x2029 {
					break
				}
				j += size
			}
			mark(kinds, i, j, spanComment)
			i = j
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			j := len(src)
			if end >= 0 {
				j = i + 2 + end + 2
			} else if problem == "" {
				problem = "unterminated comment at byte " + strconv.Itoa(i)
			}
			mark(kinds, i, j, spanComment)
			i = j
		case src[i] == '"' || src[i] == '\'':
			q := src[i]
			j := i + 1
			for j < len(src) && src[j] != q && src[j] != '\n' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(src) || src[j] != q {
				if problem == "" {
					problem = "unterminated string at byte " + strconv.Itoa(i)
				}
				j = min(j, len(src))
			} else {
				j++
			}
			mark(kinds, i, j, spanString)
			i = j
		default:
			i++
		}
	}
	return kinds, problem
}

func mark(kinds []byte, from, to int, k byte) {
	for i := from; i < to; i++ {
		kinds[i] = k
	}
}

// checkStructure is a cheap stand-in for a parser (esbuild is too slow
// inside fuzz workers): string literals and comments terminate, and
// brackets outside them balance.
func checkStructure(t testing.TB, src string) {
	t.Helper()
	kinds, problem := tsSpans(src)
	if problem != "" {
		t.Fatalf("%s:\n%s", problem, src)
	}
	var stack []byte
	pairs := map[byte]byte{')': '(', ']': '[', '}': '{', '>': '<'}
	for i := 0; i < len(src); i++ {
		if kinds[i] != spanCode {
			continue
		}
		switch c := src[i]; c {
		case '(', '[', '{', '<':
			stack = append(stack, c)
		case ')', ']', '}', '>':
			if len(stack) == 0 || stack[len(stack)-1] != pairs[c] {
				t.Fatalf("unbalanced %q at byte %d: …%s", c, i, src[max(0, i-80):i+1])
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) > 0 {
		t.Fatalf("unclosed %q", stack)
	}
}

// checkInert reports every occurrence of marker that lies in code.
func checkInert(t testing.TB, src, marker string) {
	t.Helper()
	kinds, problem := tsSpans(src)
	if problem != "" {
		t.Errorf("%s", problem)
	}
	for off := 0; ; {
		i := strings.Index(src[off:], marker)
		if i < 0 {
			return
		}
		at := off + i
		if kinds[at] == spanCode {
			lo, hi := max(0, at-60), min(len(src), at+60)
			t.Errorf("%q escaped into code at byte %d: …%s…", marker, at, src[lo:hi])
		}
		off = at + len(marker)
	}
}

// docComments returns the text of every /** … */ block.
func docComments(src string) []string {
	var out []string
	kinds, _ := tsSpans(src)
	for i := 0; i < len(src); i++ {
		if kinds[i] == spanComment && strings.HasPrefix(src[i:], "/**") && (i == 0 || kinds[i-1] != spanComment) {
			j := i
			for j < len(src) && kinds[j] == spanComment {
				j++
			}
			out = append(out, src[i:j])
			i = j
		}
	}
	return out
}

func TestDTSParsesAsTypeScript(t *testing.T) {
	servers := catalogServers(t)
	for _, s := range servers {
		src := RenderServerDTS(s, DTSOptions{})
		checkTS(t, s.Name+".d.ts", src)
		if got, want := strings.Count(src, "\n  function "), len(s.Tools)+1; got != want {
			t.Errorf("%s: %d function declarations, want %d", s.Name, got, want)
		}
		for _, tool := range s.Tools {
			checkTS(t, s.Name+"/"+tool.Name, RenderToolDTS(s, tool, DTSOptions{}))
		}
	}
	checkTS(t, "index.d.ts", RenderIndexDTS(servers, DTSOptions{}))
}

func TestDTSShape(t *testing.T) {
	in := mustParse(t, `{"type":"object","properties":{
		"owner":{"type":"string","description":"Repository owner"},
		"repo":{"type":"string","description":"Repository name"},
		"title":{"type":"string","description":"Issue title"},
		"body":{"type":"string"},
		"labels":{"type":"array","items":{"type":"string"},"maxItems":5,"uniqueItems":true},
		"meta":{"type":"object","properties":{"kind":{"enum":["bug","feature"],"description":"What it is","default":"bug"}},"required":["kind"],"additionalProperties":false},
		"extra-field":{"type":["integer","null"],"minimum":0}
	},"required":["owner","repo","title"]}`)
	out := mustParse(t, `{"type":"object","properties":{"number":{"type":"integer"}},"additionalProperties":false}`)
	server := DTSServer{Name: "github", JSName: "github"}
	tool := DTSTool{Name: "create_issue", JSName: "createIssue", Title: "Create issue",
		Description: "Create a GitHub issue.", Input: in, Output: out}
	got := RenderToolDTS(server, tool, DTSOptions{})
	want := `declare namespace MCP.github {
  /**
   * Create issue
   * Create a GitHub issue.
   * MCP name: "create_issue".
   * @param owner Repository owner
   * @param repo Repository name
   * @param title Issue title
   * @returns structuredContent as declared by the server (not verified): { number?: number }
   */
  function createIssue(input: {
    owner: string;
    repo: string;
    title: string;
    body?: string;
    labels?: string[]; // items <= 5, unique
    meta?: {
      /** What it is */
      kind: "bug" | "feature"; // default: "bug"
    };
    "extra-field"?: number | null; // int >= 0
    [key: string]: unknown;
  }): Promise<McpToolResult>;
}
`
	if got != want {
		t.Errorf("RenderToolDTS:\n%s\nwant:\n%s", got, want)
	}
	checkTS(t, "shape", got)

	// No input schema, no description: an optional empty input, no doc.
	got = RenderToolDTS(server, DTSTool{Name: "ping", JSName: "ping"}, DTSOptions{})
	if want := "declare namespace MCP.github {\n  function ping(input?: {}): Promise<McpToolResult>;\n}\n"; got != want {
		t.Errorf("bare tool:\n%s", got)
	}
	// A non-object root.
	got = RenderToolDTS(server, DTSTool{Name: "r", JSName: "r", Input: mustParse(t, `{"$ref":"#/x"}`)}, DTSOptions{})
	if !strings.Contains(got, "function r(input: unknown): Promise<McpToolResult>;") {
		t.Errorf("ref root:\n%s", got)
	}
}

// hostile is text an MCP server could send to break out of comments,
// strings or declarations. PWNED marks what must stay inert.
var hostile = []string{
	"*/ PWNED(); /*",
	"ok */\nfunction PWNED(): void;\n/**",
	"a\r\n@param owner PWNED\r\n@returns PWNED",
	"line\u2028PWNED\u2029*/PWNED",
	"bidi \u202e PWNED \u202c zero\u200bwidth \x00 nul \x1b[31m ansi",
	"*/*/*/ PWNED /*/*/*",
	"\"; PWNED; \"",
	"` PWNED ${x} `",
	"</script> PWNED <!--",
	strings.Repeat("long PWNED text ", 500),
	"\xff\xfe invalid utf8 PWNED",
}

func TestDTSHostile(t *testing.T) {
	var tools []DTSTool
	for i, h := range hostile {
		hs := quote(h)
		in := mustParse(t, `{"type":"object","properties":{
			`+hs+`:{"type":"string","description":`+hs+`,"default":`+hs+`,"pattern":`+hs+`,"format":`+hs+`},
			"e":{"enum":[`+hs+`,"x"],"description":`+hs+`},
			"n":{"type":"object","properties":{`+hs+`:{"const":`+hs+`,"description":`+hs+`}},"additionalProperties":{"description":`+hs+`,"type":"string"}},
			"__proto__":{"type":"string"},
			"constructor":{"type":"string"}
		},"required":[`+hs+`,"missing `+strings.ReplaceAll(hs[1:len(hs)-1], `\u`, `u`)+`"]}`)
		out := mustParse(t, `{"type":"object","properties":{`+hs+`:{"enum":[`+hs+`]}},"additionalProperties":false}`)
		names := []string{"tool" + string(rune('a'+i)), "delete", "a-b", "1x", "", "__proto__", "constructor"}
		tools = append(tools, DTSTool{
			Name: h, JSName: names[i%len(names)], Title: h, Description: h + "\n\n" + h,
			Input: in, Output: out,
		})
	}
	servers := []DTSServer{
		{Name: "evil\nPWNED */", JSName: "evil", Tools: tools},
		{Name: "x", JSName: "bad name", Tools: tools[:2]},
		{Name: "y", JSName: "delete", Tools: tools[:1]},
	}
	for _, s := range servers {
		src := RenderServerDTS(s, DTSOptions{})
		checkTS(t, s.JSName, src)
		checkInert(t, src, "PWNED")
		for _, doc := range docComments(src) {
			body := strings.TrimSuffix(strings.TrimPrefix(doc, "/**"), "*/")
			if strings.Contains(body, "*/") || strings.Contains(body, "/*") {
				t.Errorf("comment delimiter inside a doc comment: %q", doc)
			}
			for _, line := range strings.Split(body, "\n") {
				l := strings.TrimLeft(line, " *")
				if strings.HasPrefix(l, "@") && !strings.HasPrefix(l, "@param ") && !strings.HasPrefix(l, "@returns ") {
					t.Errorf("injected tag: %q", line)
				}
				if strings.HasPrefix(l, "@param PWNED") || strings.HasPrefix(l, "@returns PWNED") {
					t.Errorf("injected tag: %q", line)
				}
			}
		}
		for _, tool := range s.Tools {
			one := RenderToolDTS(s, tool, DTSOptions{})
			checkTS(t, s.JSName+"/tool", one)
			checkInert(t, one, "PWNED")
		}
	}
	idx := RenderIndexDTS(servers, DTSOptions{})
	checkTS(t, "index", idx)
	checkInert(t, idx, "PWNED")
	// Every line of every file is one line: no raw line terminators besides \n.
	for _, s := range servers {
		src := RenderServerDTS(s, DTSOptions{})
		if strings.ContainsAny(src, "\r\u2028\u2029\u0085\x00\u202e\u200b") {
			t.Errorf("%s: raw control or separator character in output", s.JSName)
		}
	}
}

func TestDTSFileBudget(t *testing.T) {
	linear := serverByName(t, "linear")
	full := RenderServerDTS(linear, DTSOptions{})
	src := RenderServerDTS(linear, DTSOptions{MaxBytes: 20000})
	checkTS(t, "linear-small", src)
	m := regexp.MustCompile(`// (\d+) tools shortened to keep this file under 20000 bytes`).FindStringSubmatch(src)
	if m == nil {
		t.Fatalf("no shortening comment:\n%s", src[len(src)-500:])
	}
	if got, want := strings.Count(src, "\n  function "), len(linear.Tools)+1; got != want {
		t.Errorf("%d function declarations, want %d", got, want)
	}
	short := strings.Count(src, "(input: unknown): Promise<McpToolResult>;\n")
	if m[1] != strconv.Itoa(short) {
		t.Errorf("comment says %s shortened, found %d one-liners", m[1], short)
	}
	head := src[:strings.Index(src, "(input: unknown)")]
	if len(head) > 20000 || !strings.HasPrefix(full, head[:strings.LastIndex(head, "\n\n")]) {
		t.Errorf("shortened file does not start with the full rendering (%d bytes)", len(head))
	}
	if len(full) > DefaultMaxBytes {
		t.Errorf("linear.d.ts %d bytes > default budget", len(full))
	}
}

func TestDTSToolBudget(t *testing.T) {
	// 40 properties, each an object of 40 described properties: ~100 KB in full.
	var props []string
	for i := 0; i < 40; i++ {
		var inner []string
		for j := 0; j < 40; j++ {
			inner = append(inner, `"inner`+strconv.Itoa(j)+`":{"type":"string","description":"`+strings.Repeat("d", 60)+`"}`)
		}
		props = append(props, `"p`+strconv.Itoa(i)+`":{"type":"object","description":"outer","properties":{`+strings.Join(inner, ",")+`}}`)
	}
	in := mustParse(t, `{"type":"object","properties":{`+strings.Join(props, ",")+`}}`)
	server := DTSServer{Name: "s", JSName: "s"}
	got := RenderToolDTS(server, DTSTool{Name: "big", JSName: "big", Input: in}, DTSOptions{})
	checkTS(t, "collapsed", got)
	if !strings.Contains(got, "    p0?: object;\n") || len(got) > DefaultMaxToolBytes {
		t.Errorf("expected nested objects collapsed (%d bytes):\n%.600s", len(got), got)
	}
	got = RenderToolDTS(server, DTSTool{Name: "big", JSName: "big", Input: in}, DTSOptions{MaxToolBytes: 500})
	checkTS(t, "opaque", got)
	if !strings.Contains(got, `function big(input: unknown): Promise<McpToolResult>; // input schema too large to declare: $api("big", { schema: true })`) {
		t.Errorf("expected an opaque input:\n%s", got)
	}
}

func TestDTSDeterministic(t *testing.T) {
	s := serverByName(t, "notion")
	a := RenderServerDTS(s, DTSOptions{})
	for i := 0; i < 3; i++ {
		if RenderServerDTS(s, DTSOptions{}) != a {
			t.Fatal("unstable rendering")
		}
	}
	// Schemas parsed again give the same text.
	if RenderServerDTS(serverByName(t, "notion"), DTSOptions{}) != a {
		t.Fatal("unstable across parses")
	}
}

func TestIndexDTS(t *testing.T) {
	servers := []DTSServer{
		{Name: "github", JSName: "github", Tools: make([]DTSTool, 26)},
		{Name: "chrome-devtools", JSName: "chromeDevtools", Tools: make([]DTSTool, 1)},
	}
	src := RenderIndexDTS(servers, DTSOptions{})
	checkTS(t, "index", src)
	for _, want := range []string{
		"type McpToolResult = {",
		"function $search(query: string, options?: { limit?: number; server?: string }): Promise<Array<{ server: string; tool: string; call: string; description: string; input: string; why: string }>>;",
		"// Servers (2): github, chromeDevtools.",
		"/** \"github\": 26 tools, declared in mcp/github.d.ts. */\ndeclare namespace MCP.github {",
		"/** \"chrome-devtools\": 1 tool, declared in mcp/chrome-devtools.d.ts. */\ndeclare namespace MCP.chromeDevtools {",
		"  const resources: McpResources;\n  const prompts: McpPrompts;\n",
		"get(params: { name: string; arguments?: { [key: string]: string } }): Promise<McpPromptResult>;",
		"read(params: { uri: string }): Promise<McpResourceContents>;",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("index.d.ts lacks %q", want)
		}
	}
	if got := RenderIndexDTS(nil, DTSOptions{}); !strings.Contains(got, "// Servers (0).") {
		t.Errorf("empty index:\n%s", got)
	}
}

// TestConcurrentRender renders shared schemas from many goroutines (run
// with -race: the memoized output notes are the only mutable state).
func TestConcurrentRender(t *testing.T) {
	s := serverByName(t, "linear")
	want := RenderServerDTS(serverByName(t, "linear"), DTSOptions{})
	done := make(chan string)
	for i := 0; i < 8; i++ {
		go func() { done <- RenderServerDTS(s, DTSOptions{}) }()
	}
	for i := 0; i < 8; i++ {
		if got := <-done; got != want {
			t.Fatal("concurrent rendering differs")
		}
	}
}
