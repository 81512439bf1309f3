package namespace

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/codemode-go/codemode/internal/schemahint"
)

// ToolInfo is what a namespace's declaration file says about a backing tool.
type ToolInfo struct {
	ID          string
	Description string
	Input       []byte // input JSON Schema (may be empty)
	Output      []byte // declared output JSON Schema (may be empty)
}

// Declaration bounds.
const (
	dtsTypeLen  = 4000 // one rendered type
	dtsDocLen   = 400  // one description
	dtsMaxBytes = 64 << 10
	dtsDataDeep = 6 // nesting of data types
)

// FilePath is the virtual file of a namespace: namespaces/<Global>.d.ts.
func FilePath(global string) string { return "namespaces/" + global + ".d.ts" }

// DTS renders the declaration file of a run's namespace from its scope and its backing tools'
// schemas (N5): each callable is a function whose input is the tool's input type (when the
// default mapper passes the first argument through) and whose result is the tool's declared
// output, so a model reads its types the way it reads an MCP server's.
func DTS(s *Scope, tool func(name string) (ToolInfo, bool)) string {
	var data any
	_ = json.Unmarshal(s.Data, &data)
	calls := map[string]Callable{}
	for _, c := range s.Calls {
		calls[strings.Join(c.Path, "\x00")] = c
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// %s: the %s namespace of plugin %q. Call it as %s.<member>(…) or namespaces.%s.<member>(…).\n",
		FilePath(s.GlobalName), s.GlobalName, s.PluginID, s.GlobalName, s.GlobalName)
	b.WriteString("// Each function calls one catalog tool (named in its doc); the promise resolves to the tool's value,\n")
	b.WriteString("// and a failed call rejects with an Error whose .code says why.\n\n")
	w := &dtsWriter{b: &b, calls: calls, tool: tool}
	if c, ok := calls[""]; ok {
		w.function(s.GlobalName, c, "", "declare ")
		return b.String()
	}
	fmt.Fprintf(&b, "declare namespace %s {\n", s.GlobalName)
	w.members(data, nil, 1)
	b.WriteString("}\n")
	out := b.String()
	if len(out) > dtsMaxBytes {
		out = out[:dtsMaxBytes] + "\n// … truncated\n"
	}
	return out
}

type dtsWriter struct {
	b     *strings.Builder
	calls map[string]Callable
	tool  func(string) (ToolInfo, bool)
}

func (w *dtsWriter) indent(n int) string { return strings.Repeat("  ", n) }

func (w *dtsWriter) members(v any, path []string, depth int) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := append(append([]string(nil), path...), k)
		if c, ok := w.calls[strings.Join(p, "\x00")]; ok {
			w.function(k, c, w.indent(depth), "")
			continue
		}
		name := k
		if !schemahint.IsIdentifier(k) {
			name = strconv.Quote(k) // not callable as Global.k: still declared, quoted
		}
		if sub, ok := m[k].(map[string]any); ok && w.hasCalls(p) {
			fmt.Fprintf(w.b, "%snamespace %s {\n", w.indent(depth), name)
			w.members(sub, p, depth+1)
			fmt.Fprintf(w.b, "%s}\n", w.indent(depth))
			continue
		}
		fmt.Fprintf(w.b, "%sconst %s: %s;\n", w.indent(depth), name, valueType(m[k], 0))
	}
}

// hasCalls reports whether a callable lives under path.
func (w *dtsWriter) hasCalls(path []string) bool {
	prefix := strings.Join(path, "\x00") + "\x00"
	for k := range w.calls {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// function declares a callable; indent starts both lines, prefix the declaration.
func (w *dtsWriter) function(name string, c Callable, indent, prefix string) {
	info, ok := w.tool(c.Tool)
	in, out := "unknown", "unknown"
	if ok {
		if s, err := schemahint.Parse(info.Input); err == nil && len(info.Input) > 0 {
			in = schemahint.InputHint(s, dtsTypeLen)
		} else if len(info.Input) == 0 {
			in = "{}"
		}
		if s, err := schemahint.Parse(info.Output); err == nil && len(info.Output) > 0 {
			if h, complete := schemahint.OutputHint(s, dtsTypeLen); complete {
				out = h
			}
		}
	}
	doc := clipDoc(info.Description)
	id := info.ID
	if id == "" {
		id = c.Tool
	}
	fmt.Fprintf(w.b, "%s/** %s (calls %s) */\n", indent, doc, id)
	if c.Input != nil {
		fmt.Fprintf(w.b, "%s%sfunction %s(...args: unknown[]): Promise<%s>; // arguments are mapped to %s's input: %s\n", indent, prefix, name, out, c.Tool, in)
		return
	}
	fmt.Fprintf(w.b, "%s%sfunction %s(input?: %s): Promise<%s>;\n", indent, prefix, name, in, out)
}

// valueType is a TypeScript type for a plain JSON value.
func valueType(v any, depth int) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64, json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		if len(x) == 0 || depth >= dtsDataDeep {
			return "unknown[]"
		}
		return "Array<" + valueType(x[0], depth+1) + ">"
	case map[string]any:
		if depth >= dtsDataDeep {
			return "object"
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			name := k
			if !schemahint.IsIdentifier(k) {
				name = strconv.Quote(k)
			}
			parts[i] = name + ": " + valueType(x[k], depth+1)
		}
		return "{ " + strings.Join(parts, "; ") + " }"
	}
	return "unknown"
}

// clipDoc keeps a description to one bounded line that cannot close the comment.
func clipDoc(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, "*/", "* /")
	if len(s) > dtsDocLen {
		n := dtsDocLen
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	if s == "" {
		return "Namespace function"
	}
	return s
}
