// Package namespace is the registry of plugin namespaces (docs/semantics.md §10, N1–N6): domain
// APIs such as `Git.log(...)` that a trusted loader registers for a plugin. It decides which
// namespaces a run may see (N2: every backing tool is in the run's catalog and owned by the
// registering plugin), serializes each one's per-run scope into plain data plus callable markers
// (N3–N4), and resolves a guest's call back to the one catalog tool it may target (N5).
package namespace

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/codemode-go/codemode/api"
)

// ReservedPrefix is the prefix of the runtime's internal identifiers; no global name may use it.
const ReservedPrefix = "__codemode"

// reserved are the guest globals a namespace can never take: code mode's own (N4) and the
// JavaScript built-ins cells rely on.
var reserved = map[string]bool{
	"tools": true, "namespaces": true, "text": true, "json": true, "yield_control": true, "MCP": true,
	"API": true, "ALL_TOOLS": true, "console": true, "setTimeout": true, "clearTimeout": true,
	"agents": true, "phase": true, "log": true, // the swarm's (tools.swarm)
	"globalThis": true, "undefined": true, "NaN": true, "Infinity": true, "eval": true,
	"Object": true, "Function": true, "Array": true, "String": true, "Number": true, "Boolean": true,
	"Symbol": true, "BigInt": true, "Math": true, "JSON": true, "Date": true, "RegExp": true,
	"Error": true, "TypeError": true, "RangeError": true, "SyntaxError": true, "ReferenceError": true,
	"EvalError": true, "URIError": true, "AggregateError": true, "Promise": true, "Proxy": true,
	"Reflect": true, "Map": true, "Set": true, "WeakMap": true, "WeakSet": true, "WeakRef": true,
	"ArrayBuffer": true, "SharedArrayBuffer": true, "DataView": true, "Atomics": true, "Intl": true,
	"parseInt": true, "parseFloat": true, "isNaN": true, "isFinite": true, "encodeURI": true,
	"decodeURI": true, "encodeURIComponent": true, "decodeURIComponent": true, "escape": true,
	"unescape": true, "require": true, "import": true, "module": true, "exports": true,
}

// reservedWords cannot be identifiers at all.
var reservedWords = map[string]bool{
	"break": true, "case": true, "catch": true, "class": true, "const": true, "continue": true,
	"debugger": true, "default": true, "delete": true, "do": true, "else": true, "enum": true,
	"export": true, "extends": true, "false": true, "finally": true, "for": true, "function": true,
	"if": true, "in": true, "instanceof": true, "new": true, "null": true, "return": true,
	"super": true, "switch": true, "this": true, "throw": true, "true": true, "try": true,
	"typeof": true, "var": true, "void": true, "while": true, "with": true, "yield": true,
	"let": true, "static": true, "implements": true, "interface": true, "package": true,
	"private": true, "protected": true, "public": true, "await": true, "async": true,
	"arguments": true,
}

var identifier = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]{0,63}$`)

// Entry is a registered namespace.
type Entry struct {
	PluginID string
	NS       api.Namespace
	Config   []byte
}

// Registry is the process-local namespace registry (N1). It is safe for concurrent use.
type Registry struct {
	mu      sync.Mutex
	byID    map[string]*Entry
	version atomic.Uint64
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{byID: map[string]*Entry{}} }

// Version changes whenever the registry does: exec descriptions and visibility depend on it.
func (r *Registry) Version() uint64 { return r.version.Load() }

// CheckGlobalName reports why name cannot be a namespace's global, or nil.
func CheckGlobalName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("globalName is empty")
	case !identifier.MatchString(name) || reservedWords[name]:
		return fmt.Errorf("globalName %q is not a JavaScript identifier", name)
	case reserved[name]:
		return fmt.Errorf("globalName %q is reserved", name)
	case len(name) >= len(ReservedPrefix) && name[:len(ReservedPrefix)] == ReservedPrefix:
		return fmt.Errorf("globalName %q uses the reserved prefix %s", name, ReservedPrefix)
	}
	return nil
}

// Register adds a namespace for pluginID (N1). Errors say exactly what is wrong.
func (r *Registry) Register(pluginID string, ns api.Namespace, config []byte) error {
	switch {
	case pluginID == "":
		return fmt.Errorf("namespace %q: plugin id is empty", ns.ID)
	case ns.ID == "":
		return fmt.Errorf("namespace of plugin %s: id is empty", pluginID)
	case len(ns.RequiredToolNames) == 0:
		return fmt.Errorf("namespace %q: requiredToolNames is empty (a namespace is visible only where its tools are)", ns.ID)
	case ns.CreateScope == nil:
		return fmt.Errorf("namespace %q: createScope is missing", ns.ID)
	}
	if err := CheckGlobalName(ns.GlobalName); err != nil {
		return fmt.Errorf("namespace %q: %w", ns.ID, err)
	}
	for _, t := range ns.RequiredToolNames {
		if t == "" {
			return fmt.Errorf("namespace %q: requiredToolNames has an empty name", ns.ID)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.byID[ns.ID]; ok {
		return fmt.Errorf("namespace %q is already registered (by plugin %s)", ns.ID, e.PluginID)
	}
	for _, e := range r.byID {
		if e.NS.GlobalName == ns.GlobalName {
			return fmt.Errorf("namespace %q: globalName %q is already taken by namespace %q of plugin %s", ns.ID, ns.GlobalName, e.NS.ID, e.PluginID)
		}
	}
	ns.RequiredToolNames = slices.Clone(ns.RequiredToolNames)
	r.byID[ns.ID] = &Entry{PluginID: pluginID, NS: ns, Config: slices.Clone(config)}
	r.version.Add(1)
	return nil
}

// ClearPlugin removes every namespace of a plugin (N6: disable, uninstall, rollback) and returns
// how many there were.
func (r *Registry) ClearPlugin(pluginID string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for id, e := range r.byID {
		if e.PluginID == pluginID {
			delete(r.byID, id)
			n++
		}
	}
	if n > 0 {
		r.version.Add(1)
	}
	return n
}

// ClearAll empties the registry (tests).
func (r *Registry) ClearAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byID = map[string]*Entry{}
	r.version.Add(1)
}

// Visible returns the namespaces a run may see, by global name (N2): those whose every required
// tool is in the run's catalog as native:<plugin>:<tool>. has answers "is this catalog id in the
// run's catalog".
func (r *Registry) Visible(has func(catalogID string) bool) []*Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*Entry
	for _, e := range r.byID {
		ok := true
		for _, t := range e.NS.RequiredToolNames {
			if !has(ToolID(e.PluginID, t)) {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].NS.GlobalName < out[j].NS.GlobalName })
	return out
}

// ToolID is the catalog id of a plugin's tool.
func ToolID(pluginID, tool string) string {
	return string(api.SourceNative) + ":" + pluginID + ":" + tool
}
