package codemode

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"

	"github.com/codemode-go/codemode/api"
)

// Plugins are added, disabled and removed while the runtime runs. A plugin's tools join every
// run activated after AddPlugin (catalogued as native:<plugin id>:<tool>, after the core tools,
// K1); its namespaces are registered with it (N1) and cleared when it goes (N6). A run that was
// activated or suspended before a removal keeps its catalog, but a call to a removed plugin's
// tool fails with a catchable "plugin_removed" error instead of reaching code that was stopped.

var pluginID = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

type plugins struct {
	mu      sync.Mutex
	order   []string
	byID    map[string]*api.Plugin
	removed map[string]bool
}

// AddPlugin starts a plugin (its Start hook), registers its namespaces and offers its tools to
// every run activated from now on. It fails — and leaves nothing behind — for an invalid or
// duplicate id, a namespace that cannot be registered, or a Start that fails.
func (rt *Runtime) AddPlugin(ctx context.Context, p api.Plugin) error {
	if !pluginID.MatchString(p.ID) || p.ID == api.CoreOwner || p.ID == api.AppOwner {
		return fmt.Errorf("plugin id %q: use 1–64 of a–z, 0–9, _ and - (and not %q or %q)", p.ID, api.CoreOwner, api.AppOwner)
	}
	ps := &rt.plugins
	ps.mu.Lock()
	if _, dup := ps.byID[p.ID]; dup {
		ps.mu.Unlock()
		return fmt.Errorf("plugin %q is already added", p.ID)
	}
	ps.mu.Unlock()
	for _, ns := range p.Namespaces {
		if err := rt.namespaces.Register(p.ID, ns, p.Config); err != nil {
			rt.namespaces.ClearPlugin(p.ID) // rollback (N6)
			return fmt.Errorf("plugin %s: %w", p.ID, err)
		}
	}
	if p.Start != nil {
		if err := p.Start(ctx); err != nil {
			rt.namespaces.ClearPlugin(p.ID)
			return fmt.Errorf("starting plugin %s: %w", p.ID, err)
		}
	}
	tools := make([]*api.Tool, 0, len(p.Tools))
	for _, t := range p.Tools {
		if t == nil {
			continue
		}
		c := *t
		c.Source, c.Owner = api.SourceNative, p.ID
		tools = append(tools, &c)
	}
	p.Tools = tools
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if _, dup := ps.byID[p.ID]; dup { // added concurrently
		if p.Stop != nil {
			_ = p.Stop(context.WithoutCancel(ctx))
		}
		return fmt.Errorf("plugin %q is already added", p.ID)
	}
	if ps.byID == nil {
		ps.byID, ps.removed = map[string]*api.Plugin{}, map[string]bool{}
	}
	ps.byID[p.ID] = &p
	ps.order = append(ps.order, p.ID)
	delete(ps.removed, p.ID)
	return nil
}

// RemovePlugin disables a plugin: its namespaces are cleared (N6), its tools leave the runs
// activated from now on, calls to them from earlier runs fail cleanly, and its Stop hook runs.
func (rt *Runtime) RemovePlugin(ctx context.Context, id string) error {
	ps := &rt.plugins
	ps.mu.Lock()
	p, ok := ps.byID[id]
	if !ok {
		ps.mu.Unlock()
		return fmt.Errorf("no plugin %q", id)
	}
	delete(ps.byID, id)
	ps.order = slices.DeleteFunc(ps.order, func(s string) bool { return s == id })
	ps.removed[id] = true
	ps.mu.Unlock()
	rt.namespaces.ClearPlugin(id)
	if p.Stop != nil {
		if err := p.Stop(ctx); err != nil {
			return fmt.Errorf("stopping plugin %s: %w", id, err)
		}
	}
	return nil
}

// Plugins lists the ids of the added plugins, in the order they were added.
func (rt *Runtime) Plugins() []string {
	rt.plugins.mu.Lock()
	defer rt.plugins.mu.Unlock()
	return slices.Clone(rt.plugins.order)
}

// RegisterNamespace registers a namespace for a plugin whose lifecycle the embedder manages
// itself (N1); AddPlugin registers a plugin's Namespaces for you. Errors are specific
// (`globalName "tools" is reserved`, …).
func (rt *Runtime) RegisterNamespace(pluginID string, ns api.Namespace) error {
	return rt.namespaces.Register(pluginID, ns, nil)
}

// ClearNamespaces removes every namespace of a plugin (N6: disable, uninstall, rollback) and
// returns how many there were.
func (rt *Runtime) ClearNamespaces(pluginID string) int { return rt.namespaces.ClearPlugin(pluginID) }

// pluginTools returns the added plugins' tools, in the order the plugins were added.
func (rt *Runtime) pluginTools() []*api.Tool {
	ps := &rt.plugins
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var out []*api.Tool
	for _, id := range ps.order {
		out = append(out, ps.byID[id].Tools...)
	}
	return out
}

// checkTool refuses calls to tools of plugins removed since the run was activated.
func (rt *Runtime) checkTool(t *api.Tool) error {
	if t.Source != api.SourceNative && t.Source != "" || t.Owner == "" || t.Owner == api.CoreOwner || t.Owner == api.AppOwner {
		return nil
	}
	ps := &rt.plugins
	ps.mu.Lock()
	removed := ps.removed[t.Owner]
	ps.mu.Unlock()
	if removed {
		return &api.ToolError{Name: "Error", Code: "plugin_removed",
			Message: fmt.Sprintf("%s is not available: plugin %s was removed", t.ID(), t.Owner)}
	}
	return nil
}

// stopPlugins stops every added plugin, last added first (Close).
func (rt *Runtime) stopPlugins(ctx context.Context) error {
	var errs []error
	for _, id := range slices.Backward(rt.Plugins()) {
		if err := rt.RemovePlugin(ctx, id); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
