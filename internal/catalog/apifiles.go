package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/codemode-go/codemode/internal/schemahint"
)

// The virtual declaration files (M3): mcp/index.d.ts and one mcp/<server>.d.ts per visible
// server, rendered from the run catalog's MCP entries on first read and cached with the catalog
// (which is shared by every run with the same tool set). Never written anywhere.

const apiIndexPath = "mcp/index.d.ts"

// APIFile is one entry of API.list.
type APIFile struct {
	Path        string `json:"path"`
	Bytes       int    `json:"bytes"`
	Description string `json:"description"`
}

type apiFiles struct {
	once    sync.Once
	servers []schemahint.DTSServer
	byPath  map[string]int // path → server index (-1 for the index file)
	mu      sync.Mutex
	text    map[string]string
}

func (c *Catalog) dts() *apiFiles {
	f := &c.files
	f.once.Do(func() {
		f.byPath = map[string]int{apiIndexPath: -1}
		f.text = map[string]string{}
		for i, s := range c.servers {
			ds := schemahint.DTSServer{Name: s.Name, JSName: s.JS}
			for _, e := range s.Entries {
				t := schemahint.DTSTool{Name: e.Tool.Name, JSName: e.JSName, Title: e.Tool.Label, Description: e.Tool.Description}
				if len(e.Tool.InputSchema) > 0 && len(e.Tool.InputSchema) <= maxSchemaBytes {
					t.Input, _ = schemahint.Parse(e.Tool.InputSchema)
				}
				if len(e.Tool.OutputSchema) > 0 && len(e.Tool.OutputSchema) <= maxSchemaBytes {
					t.Output, _ = schemahint.Parse(e.Tool.OutputSchema)
				}
				ds.Tools = append(ds.Tools, t)
			}
			f.servers = append(f.servers, ds)
			f.byPath["mcp/"+s.Name+".d.ts"] = i
		}
	})
	return f
}

func (f *apiFiles) render(path string) (string, bool) {
	i, ok := f.byPath[path]
	if !ok {
		return "", false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if t, ok := f.text[path]; ok {
		return t, true
	}
	var t string
	if i < 0 {
		t = schemahint.RenderIndexDTS(f.servers, schemahint.DTSOptions{})
	} else {
		t = schemahint.RenderServerDTS(f.servers[i], schemahint.DTSOptions{})
	}
	f.text[path] = t
	return t, true
}

// checkPath rejects absolute paths, empty or dot segments and backslashes.
func checkPath(p string, allowEmpty bool) error {
	if p == "" && allowEmpty {
		return nil
	}
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || strings.ContainsRune(p, 0) {
		return fmt.Errorf("invalid API path %q: use a relative path like %q", p, apiIndexPath)
	}
	segs := strings.Split(strings.TrimSuffix(p, "/"), "/")
	for _, s := range segs {
		if s == "" || s == "." || s == ".." {
			return fmt.Errorf("invalid API path %q: empty, '.' and '..' segments are not allowed", p)
		}
	}
	return nil
}

// APIList returns the files under prefix ("" or "mcp" for all).
func (c *Catalog) APIList(prefix string) ([]APIFile, error) {
	if err := checkPath(prefix, true); err != nil {
		return nil, err
	}
	f := c.dts()
	prefix = strings.TrimSuffix(prefix, "/")
	out := []APIFile{}
	paths := []string{apiIndexPath}
	for _, s := range c.servers {
		paths = append(paths, "mcp/"+s.Name+".d.ts")
	}
	for _, p := range paths {
		if prefix != "" && p != prefix && !strings.HasPrefix(p, prefix+"/") {
			continue
		}
		text, _ := f.render(p)
		desc := "MCP overview: shared types, MCP.$search and the servers of this run"
		if i := f.byPath[p]; i >= 0 {
			desc = fmt.Sprintf("MCP server %q: %d tools, called as MCP.%s.<tool>({...})", f.servers[i].Name, len(f.servers[i].Tools), f.servers[i].JSName)
		}
		out = append(out, APIFile{Path: p, Bytes: len(text), Description: desc})
	}
	return out, nil
}

// APIRead returns a file's content.
func (c *Catalog) APIRead(path string) (string, error) {
	if err := checkPath(path, false); err != nil {
		return "", err
	}
	text, ok := c.dts().render(path)
	if !ok {
		return "", fmt.Errorf("no API file %q: API.list(\"mcp\") lists the files of this run", path)
	}
	return text, nil
}

// HasServer reports whether an MCP server has visible tools in this catalog.
func (c *Catalog) HasServer(name string) bool {
	for _, s := range c.servers {
		if s.Name == name {
			return true
		}
	}
	return false
}

// APIHeader answers MCP.<server>.$api(toolName?, {schema?}): declarations of the server or one
// tool, and with schema the tool's JSON Schemas (M2).
func (c *Catalog) APIHeader(server, tool string, schema bool) ([]byte, error) {
	f := c.dts()
	idx := -1
	for i, s := range c.servers {
		if s.Name == server {
			idx = i
		}
	}
	if idx < 0 {
		return nil, errors.New("MCP server " + server + " is not available in this run")
	}
	s := f.servers[idx]
	if tool == "" {
		text, _ := f.render("mcp/" + s.Name + ".d.ts")
		return json.Marshal(map[string]any{"server": s.Name, "declarations": text})
	}
	for i, t := range s.Tools {
		if t.Name != tool && t.JSName != tool {
			continue
		}
		m := map[string]any{"server": s.Name, "tool": t.Name,
			"declarations": schemahint.RenderToolDTS(s, t, schemahint.DTSOptions{})}
		if schema {
			e := c.servers[idx].Entries[i]
			m["inputSchema"] = rawOr(e.Tool.InputSchema, map[string]any{"type": "object"})
			if len(e.Tool.OutputSchema) > 0 {
				m["outputSchema"] = rawOr(e.Tool.OutputSchema, nil)
			}
		}
		return json.Marshal(m)
	}
	return nil, fmt.Errorf("MCP server %s has no tool %q", server, tool)
}
