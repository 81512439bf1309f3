package schemahint

import (
	"strconv"
	"strings"
	"unsafe"

	"github.com/codemode-go/codemode/internal/jsname"
)

// DTSTool is one MCP tool to declare.
type DTSTool struct {
	Name        string  // the MCP tool name as the server sent it (for docs)
	JSName      string  // the JS identifier the guest calls: MCP.<server>.<JSName>(...)
	Title       string  // untrusted
	Description string  // untrusted
	Input       *Schema // may be nil (renders `input?: {}`)
	Output      *Schema // may be nil; shown only as a doc note, never as a typed result
}

// DTSServer is one MCP server to declare. Name is the server's configured
// name (used in the file path mcp/<Name>.d.ts and in docs); JSName is the
// identifier of its namespace, MCP.<JSName>.
type DTSServer struct {
	Name   string
	JSName string
	Tools  []DTSTool
}

// DTSOptions bounds the rendered declarations. Zero (or negative) fields take
// the defaults.
type DTSOptions struct {
	// MaxDescription bounds a tool's description in its JSDoc block (runes;
	// default 600). The title is bounded separately (120 runes).
	MaxDescription int
	// MaxParamDescription bounds each @param text and each nested property's
	// /** … */ doc (runes; default 200).
	MaxParamDescription int
	// MaxBytes bounds a whole file (default 256 KiB). Once a file would pass
	// it, the remaining tools (or servers, in index.d.ts) are declared in one
	// line each, and a final comment says how many were shortened; the file
	// may exceed MaxBytes by those lines.
	MaxBytes int
	// MaxToolBytes bounds one tool's declaration (default 32 KiB). A larger
	// one is rendered again with nested objects collapsed to `object`, then
	// with `input: unknown`.
	MaxToolBytes int
}

// Defaults of DTSOptions.
const (
	DefaultMaxDescription      = 600
	DefaultMaxParamDescription = 200
	DefaultMaxBytes            = 256 << 10
	DefaultMaxToolBytes        = 32 << 10
)

const (
	maxTitle      = 120 // runes of a tool title in its doc
	maxOutputNote = 400 // bytes of the declared-output note in a tool's doc
	shortParamDoc = 80  // @param bound when a tool is re-rendered to fit
)

func (o DTSOptions) withDefaults() DTSOptions {
	if o.MaxDescription <= 0 {
		o.MaxDescription = DefaultMaxDescription
	}
	if o.MaxParamDescription <= 0 {
		o.MaxParamDescription = DefaultMaxParamDescription
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxToolBytes <= 0 {
		o.MaxToolBytes = DefaultMaxToolBytes
	}
	return o
}

const mcpToolResultDecl = `type McpToolResult = {
  content?: unknown[];
  structuredContent?: unknown;
  isError?: boolean;
  [key: string]: unknown;
};
`

const apiDecl = "  /** Returns this TypeScript-style API header. */\n" +
	"  function $api(toolName?: string, options?: { schema?: boolean }): Promise<McpApiHeader>;\n"

// indexPrelude is the fixed part of mcp/index.d.ts: shared types, the
// per-server helper interfaces and MCP.$search.
const indexPrelude = `// mcp/index.d.ts: the MCP servers visible in this run and the helpers every server has.
// Each server's tools are declared in mcp/<server>.d.ts: read one with API.read("mcp/<server>.d.ts"),
// then call a tool as MCP.<server>.<tool>({ ... }) with one object argument.

` + mcpToolResultDecl + `
/**
 * What MCP.<server>.$api(toolName?, { schema? }) returns: the TypeScript-style
 * declarations of the server (or of one tool) and, with a tool name and
 * { schema: true }, that tool's JSON Schemas.
 */
type McpApiHeader = {
  server: string;
  tool?: string;
  declarations: string;
  inputSchema?: unknown;
  outputSchema?: unknown;
};

type McpResource = {
  uri: string;
  name?: string;
  title?: string;
  description?: string;
  mimeType?: string;
  [key: string]: unknown;
};

type McpResourceContents = {
  contents: Array<{ uri: string; mimeType?: string; text?: string; blob?: string; [key: string]: unknown }>;
  [key: string]: unknown;
};

type McpPrompt = {
  name: string;
  title?: string;
  description?: string;
  arguments?: Array<{ name: string; description?: string; required?: boolean }>;
  [key: string]: unknown;
};

type McpPromptResult = {
  description?: string;
  messages: Array<{ role: "user" | "assistant"; content: unknown }>;
  [key: string]: unknown;
};

/** MCP.<server>.resources */
interface McpResources {
  list(): Promise<McpResource[]>;
  read(params: { uri: string }): Promise<McpResourceContents>;
}

/** MCP.<server>.prompts */
interface McpPrompts {
  list(): Promise<McpPrompt[]>;
  get(params: { name: string; arguments?: { [key: string]: string } }): Promise<McpPromptResult>;
}

declare namespace MCP {
  /**
   * Searches the tools of the visible MCP servers by name and description.
   * Each result's call is the expression to call (e.g. "MCP.github.createIssue")
   * and input a compact input hint.
   */
  function $search(query: string, options?: { limit?: number; server?: string }): Promise<Array<{ server: string; tool: string; call: string; description: string; input: string; why: string }>>;
}
`

// RenderIndexDTS renders mcp/index.d.ts: McpToolResult and the other shared
// types, MCP.$search, the list of servers with their tool counts and, per
// server, its helpers ($api, resources, prompts). Servers appear in the order
// given.
func RenderIndexDTS(servers []DTSServer, opts DTSOptions) string {
	opts = opts.withDefaults()
	var b strings.Builder
	b.Grow(len(indexPrelude) + 256*len(servers))
	b.WriteString(indexPrelude)
	b.WriteString("\n// Servers (")
	b.WriteString(strconv.Itoa(len(servers)))
	b.WriteString(")")
	for i, s := range servers {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(commentLine(nsName(s)))
		if b.Len() > opts.MaxBytes/2 {
			b.WriteString(", …")
			break
		}
	}
	b.WriteString(".\n")
	shortened := 0
	for _, s := range servers {
		ns, ok := declName(s.JSName)
		if b.Len() > opts.MaxBytes {
			shortened++
			b.WriteString("declare namespace MCP." + ns + " {}\n")
			continue
		}
		b.WriteString("\n/** ")
		b.WriteString(escapeComment(quote(s.Name)))
		b.WriteString(": ")
		b.WriteString(strconv.Itoa(len(s.Tools)))
		if len(s.Tools) == 1 {
			b.WriteString(" tool")
		} else {
			b.WriteString(" tools")
		}
		b.WriteString(", declared in ")
		b.WriteString(commentLine(filePath(s.Name)))
		b.WriteString(".")
		if !ok {
			b.WriteString(" Reached as MCP[")
			b.WriteString(escapeComment(quote(s.JSName)))
			b.WriteString("].")
		}
		b.WriteString(" */\ndeclare namespace MCP.")
		b.WriteString(ns)
		b.WriteString(" {\n")
		b.WriteString("  function $api(toolName?: string, options?: { schema?: boolean }): Promise<McpApiHeader>;\n")
		b.WriteString("  const resources: McpResources;\n")
		b.WriteString("  const prompts: McpPrompts;\n")
		b.WriteString("}\n")
	}
	if shortened > 0 {
		b.WriteString("// " + strconv.Itoa(shortened) + " servers shortened to keep this file near " +
			strconv.Itoa(opts.MaxBytes) + " bytes.\n")
	}
	return b.String()
}

// bytesToString hands over a buffer that is never written again.
func bytesToString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

func nsName(s DTSServer) string {
	ns, _ := declName(s.JSName)
	return ns
}

func filePath(name string) string { return "mcp/" + name + ".d.ts" }

// RenderServerDTS renders mcp/<server>.d.ts: McpToolResult, then the
// server's namespace with $api and one declaration per tool, in the order
// given: JSDoc from the title and description (bounded, sanitised), @param
// per documented top-level property, the typed input object (schema property
// order, nested objects indented, `[key: string]: unknown;` for open
// objects, constraint notes as line comments) and `Promise<McpToolResult>`.
// A declared output schema appears only in the doc (@returns), since MCP
// output claims are untrusted. Output is deterministic.
func RenderServerDTS(s DTSServer, opts DTSOptions) string {
	opts = opts.withDefaults()
	ns, nsOK := declName(s.JSName)
	d := dtsWriter{opts: opts, ns: ns, nsReal: s.JSName, nsOK: nsOK}
	d.r.b = make([]byte, 0, min(opts.MaxBytes, 1024+800*len(s.Tools)))
	d.raw("// ")
	d.raw(commentLine(filePath(s.Name)))
	d.raw(": tools of the MCP server ")
	d.raw(commentLine(quote(s.Name)))
	d.raw(".\n// Call them as MCP.")
	d.raw(ns)
	d.raw(".<tool>({ ... }); descriptions come from the server. Shared types: mcp/index.d.ts.\n")
	if !nsOK {
		d.raw("// The namespace is reached as MCP[")
		d.raw(commentLine(quote(s.JSName)))
		d.raw("].\n")
	}
	d.raw("\n")
	d.raw(mcpToolResultDecl)
	d.raw("\ndeclare namespace MCP.")
	d.raw(ns)
	d.raw(" {\n")
	d.raw(apiDecl)
	shortened := 0
	for i := range s.Tools {
		t := &s.Tools[i]
		if shortened == 0 {
			mark := len(d.r.b)
			d.raw("\n")
			d.tool(t)
			if len(d.r.b) <= opts.MaxBytes {
				continue
			}
			d.r.b = d.r.b[:mark]
			d.raw("\n")
		}
		shortened++
		d.oneLine(t)
	}
	if shortened > 0 {
		d.raw("  // " + strconv.Itoa(shortened) + " tools shortened to keep this file under " +
			strconv.Itoa(opts.MaxBytes) + " bytes: MCP." + ns + ".$api(\"<tool>\") returns one tool's full declaration.\n")
	}
	d.raw("}\n")
	return bytesToString(d.r.b)
}

// RenderToolDTS renders the declaration of one tool inside its server's
// namespace (what MCP.<server>.$api(toolName) shows).
func RenderToolDTS(s DTSServer, tool DTSTool, opts DTSOptions) string {
	opts = opts.withDefaults()
	opts.MaxToolBytes = min(opts.MaxToolBytes, opts.MaxBytes)
	ns, nsOK := declName(s.JSName)
	d := dtsWriter{opts: opts, ns: ns, nsReal: s.JSName, nsOK: nsOK}
	d.r.b = make([]byte, 0, 2048)
	d.raw("declare namespace MCP.")
	d.raw(ns)
	d.raw(" {\n")
	d.tool(&tool)
	d.raw("}\n")
	return bytesToString(d.r.b)
}

type dtsWriter struct {
	r      renderer
	opts   DTSOptions
	ns     string
	nsReal string
	nsOK   bool

	docLines int    // content lines of the doc being written
	docFirst int    // offset of the first content line
	scratch  []byte // for quoted literals
}

// raw appends our own text, outside any budget.
func (d *dtsWriter) raw(s string) { d.r.b = append(d.r.b, s...) }

// tool renders one tool, degrading when it passes MaxToolBytes.
func (d *dtsWriter) tool(t *DTSTool) {
	start := len(d.r.b)
	for step := 0; step < 2; step++ {
		d.r = renderer{
			b:      d.r.b,
			limit:  start + d.opts.MaxToolBytes,
			mode:   modeFull,
			lim:    fullLimits,
			docMax: d.opts.MaxParamDescription,
			depth:  fullMaxDepth,
			ind:    1,
		}
		paramDoc := d.opts.MaxParamDescription
		if step == 1 {
			d.r.depth = 1
			paramDoc = min(paramDoc, shortParamDoc)
		}
		if d.fullTool(t, paramDoc) {
			return
		}
		d.r.b = d.r.b[:start]
	}
	// Last resort: the doc without parameters and an opaque input.
	d.r.over = false
	d.r.limit = int(^uint(0) >> 1)
	name, _ := declName(t.JSName)
	d.doc(t, nil, 0, false)
	d.raw("  function " + name + "(input: unknown): Promise<McpToolResult>; // input schema too large to declare: $api(" +
		commentLine(quote(t.Name)) + ", { schema: true })\n")
}

// fullTool writes the doc and signature; false when the budget ran out.
func (d *dtsWriter) fullTool(t *DTSTool, paramDoc int) bool {
	r := &d.r
	root := t.Input
	if root != nil && root.kind == kTypes && len(root.types) == 1 && root.types[0] == tObject {
		r.paramRoot = root
	}
	d.doc(t, r.paramRoot, paramDoc, true)
	name, _ := declName(t.JSName)
	r.w("  function ")
	r.w(name)
	switch {
	case emptyRoot(root):
		r.w("(input?: {}")
	default:
		if r.paramRoot != nil && !hasRequired(root) {
			r.w("(input?: ")
		} else {
			r.w("(input: ")
		}
		r.typ(root, 0)
	}
	r.w("): Promise<McpToolResult>;\n")
	return !r.over
}

func hasRequired(s *Schema) bool {
	if len(s.missingReq) > 0 {
		return true
	}
	for i := range s.props {
		if s.props[i].required {
			return true
		}
	}
	return false
}

// doc writes the JSDoc block of a tool (nothing when it would be empty):
// title, description, the MCP name when it differs from the JS name,
// @param per documented top-level property and the declared output.
func (d *dtsWriter) doc(t *DTSTool, params *Schema, paramDoc int, withOutput bool) {
	r := &d.r
	start := len(r.b)
	r.w("  /**\n")
	d.docLines, d.docFirst = 0, 0
	title := cleanDoc(t.Title, maxTitle, true)
	if title != "" && t.Title != t.Name && t.Title != t.JSName {
		d.docLine()
		r.w(title)
		r.w("\n")
	}
	desc := cleanDoc(t.Description, d.opts.MaxDescription, false)
	for desc != "" {
		line := desc
		if i := strings.IndexByte(desc, '\n'); i >= 0 {
			line, desc = desc[:i], desc[i+1:]
		} else {
			desc = ""
		}
		if line == "" {
			r.w("   *\n")
			continue
		}
		d.docLine()
		r.w(line)
		r.w("\n")
	}
	name, nameOK := declName(t.JSName)
	if t.Name != name {
		d.docLine()
		r.w("MCP name: ")
		d.quotedInComment(t.Name)
		r.w(".\n")
	}
	if !nameOK {
		d.docLine()
		r.w("Call as MCP")
		if d.nsOK {
			r.w(".")
			r.w(d.ns)
		} else {
			r.w("[")
			d.quotedInComment(d.nsReal)
			r.w("]")
		}
		r.w("[")
		d.quotedInComment(t.JSName)
		r.w("](input).\n")
	}
	if params != nil {
		shown := 0
		for i := range params.props {
			p := &params.props[i]
			if shown >= fullLimits.props {
				break
			}
			if len(p.name) > fullLimits.names {
				continue
			}
			shown++
			text := cleanDoc(p.schema.description, paramDoc, true)
			if text == "" {
				continue
			}
			d.docLine()
			r.w("@param ")
			if jsname.IsIdent(p.name) {
				r.w(p.name)
			} else {
				d.quotedInComment(p.name)
			}
			r.w(" ")
			r.w(text)
			r.w("\n")
		}
	}
	if withOutput && t.Output != nil {
		if h := t.Output.outputNote(); h != "" {
			d.docLine()
			r.w("@returns structuredContent as declared by the server (not verified): ")
			r.w(h)
			r.w("\n")
		}
	}
	switch {
	case r.over:
	case d.docLines == 0:
		r.b = r.b[:start]
	case d.docLines == 1 && len(r.b)-d.docFirst <= 200:
		// One short line: `/** text */`.
		content := r.b[d.docFirst : len(r.b)-1]
		at := start + len("  /** ")
		n := copy(r.b[at:], content)
		r.b = r.b[:at+n]
		copy(r.b[start:], "  /** ")
		r.w(" */\n")
	default:
		r.w("   */\n")
	}
}

func (d *dtsWriter) docLine() {
	d.r.w("   * ")
	if d.docLines == 0 {
		d.docFirst = len(d.r.b)
	}
	d.docLines++
}

// quotedInComment writes s as a quoted literal made safe for a comment.
func (d *dtsWriter) quotedInComment(s string) {
	d.scratch = appendQuoted(d.scratch[:0], s)
	r := &d.r
	if r.over || len(r.b)+2*len(d.scratch) > r.limit {
		r.over = true
		return
	}
	r.b = appendCommentSafe(r.b, d.scratch)
}

// outputNote is the compact hint of a declared output shown in declaration
// docs, computed once per schema.
func (s *Schema) outputNote() string {
	if p := s.outNote.Load(); p != nil {
		return *p
	}
	h := compactHint(s, maxOutputNote, false, false)
	if h == "{}" {
		h = ""
	}
	h = string(appendCommentSafe(nil, h))
	s.outNote.Store(&h)
	return h
}

// oneLine declares a tool past the file budget.
func (d *dtsWriter) oneLine(t *DTSTool) {
	name, _ := declName(t.JSName)
	d.raw("  function " + name + "(input: unknown): Promise<McpToolResult>;\n")
}
