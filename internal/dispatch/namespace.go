package dispatch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/catalog"
	"github.com/codemode-go/codemode/internal/namespace"
	"github.com/codemode-go/codemode/internal/swarm"
)

// namespaceTarget resolves a guest's call of a namespace member (N5): the namespace id and
// callable index come from the function the prelude installed; anything else is forged and
// refused. The callable's tool is the plugin's own catalog tool, and the call then takes the path
// of tools.callValue — precheck, policy, hooks, approvals, trajectory, suspension.
func (d *Dispatcher) namespaceTarget(payload []byte) (*catalog.Entry, json.RawMessage, error) {
	var p struct {
		NS   string            `json:"ns"`
		Call int               `json:"call"`
		Args []json.RawMessage `json:"args"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return nil, nil, badRequest(err)
	}
	sc := d.Namespaces[p.NS]
	if sc == nil {
		return nil, nil, &api.ToolError{Name: "Error", Code: "unknown_namespace", Message: fmt.Sprintf("namespace %q is not available in this run", p.NS)}
	}
	if p.Call < 0 || p.Call >= len(sc.Calls) {
		return nil, nil, &api.ToolError{Name: "Error", Code: "unknown_namespace", Message: fmt.Sprintf("namespace %s has no callable #%d", sc.GlobalName, p.Call)}
	}
	cl := sc.Calls[p.Call]
	label := sc.GlobalName + "." + strings.Join(cl.Path, namespace.PathSep)
	e := d.Catalog.Lookup(namespace.ToolID(sc.PluginID, cl.Tool))
	if e == nil {
		return nil, nil, &api.ToolError{Name: "Error", Code: "unavailable", Message: fmt.Sprintf("%s: its tool %s is not available in this run", label, cl.Tool)}
	}
	input, err := mapInput(cl, p.Args)
	if err != nil {
		return nil, nil, &api.ToolError{Name: "TypeError", Code: string(api.CodeInvalidInput), Message: label + ": " + err.Error()}
	}
	return e, normalInput(input), nil
}

// mapInput turns the guest's arguments into the tool's input: the callable's mapper, or the
// first argument (or {}) by default (N3). A mapper's panic is the mapper's bug, not the process's.
func mapInput(cl namespace.Callable, args []json.RawMessage) (in json.RawMessage, err error) {
	if cl.Input == nil {
		if len(args) == 0 || len(bytes.TrimSpace(args[0])) == 0 || string(args[0]) == "null" {
			return json.RawMessage("{}"), nil
		}
		return args[0], nil
	}
	defer func() {
		if r := recover(); r != nil {
			in, err = nil, fmt.Errorf("the input mapper failed: %v", r)
		}
	}()
	in, err = cl.Input(args)
	if err != nil {
		return nil, err
	}
	if !json.Valid(in) {
		return nil, fmt.Errorf("the input mapper returned invalid JSON")
	}
	return in, nil
}

// namespaceFiles are the run's namespace declaration files, by path.
func (d *Dispatcher) namespaceFiles() map[string]*namespace.Scope {
	out := map[string]*namespace.Scope{}
	for _, sc := range d.Namespaces {
		out[namespace.FilePath(sc.GlobalName)] = sc
	}
	return out
}

// namespaceDTS renders a namespace's declaration file from its backing tools.
func (d *Dispatcher) namespaceDTS(sc *namespace.Scope) string {
	return namespace.DTS(sc, func(name string) (namespace.ToolInfo, bool) {
		e := d.Catalog.Lookup(namespace.ToolID(sc.PluginID, name))
		if e == nil {
			return namespace.ToolInfo{}, false
		}
		return namespace.ToolInfo{ID: e.ID, Description: e.Tool.Description, Input: e.Tool.InputSchema, Output: e.Tool.OutputSchema}, true
	})
}

// apiList adds the namespace files under prefix to the catalog's.
func (d *Dispatcher) apiList(prefix string) ([]catalog.APIFile, error) {
	files, err := d.Catalog.APIList(prefix)
	if err != nil {
		return nil, err
	}
	prefix = strings.TrimSuffix(prefix, "/")
	var paths []string
	byPath := d.namespaceFiles()
	for p := range byPath {
		if prefix == "" || p == prefix || strings.HasPrefix(p, prefix+"/") {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		sc := byPath[p]
		files = append(files, catalog.APIFile{Path: p, Bytes: len(d.namespaceDTS(sc)),
			Description: fmt.Sprintf("namespace %s of plugin %s: %d functions, called as %s.<name>(…)", sc.GlobalName, sc.PluginID, len(sc.Calls), sc.GlobalName)})
	}
	if prefix == "" || prefix == ResultsPath {
		files = append(files, catalog.APIFile{Path: ResultsPath, Bytes: len(ResultsDTS),
			Description: "results.save/load/delete: values kept between the cells of this run"})
	}
	if d.Swarm != nil && (prefix == "" || prefix == swarm.FilePath) {
		files = append(files, catalog.APIFile{Path: swarm.FilePath, Bytes: len(d.Swarm.DTS()), Description: swarm.FileDescription})
	}
	return files, nil
}

// apiRead serves a namespace file, or the catalog's files.
func (d *Dispatcher) apiRead(path string) (string, error) {
	if path == ResultsPath {
		return ResultsDTS, nil
	}
	if sc, ok := d.namespaceFiles()[path]; ok {
		return d.namespaceDTS(sc), nil
	}
	if path == swarm.FilePath && d.Swarm != nil {
		return d.Swarm.DTS(), nil
	}
	return d.Catalog.APIRead(path)
}
