package schemahint

import (
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
)

// catalogTool is one entry of testdata/catalog.json (667 real MCP tools).
type catalogTool struct {
	Server       string          `json:"server"`
	Name         string          `json:"name"`
	Title        string          `json:"title"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  struct {
		Title string `json:"title"`
	} `json:"annotations"`
}

var (
	catalogOnce sync.Once
	catalog     []catalogTool
	catalogErr  error
)

func loadCatalog(tb testing.TB) []catalogTool {
	tb.Helper()
	catalogOnce.Do(func() {
		raw, err := os.ReadFile("testdata/catalog.json")
		if err != nil {
			catalogErr = err
			return
		}
		catalogErr = json.Unmarshal(raw, &catalog)
	})
	if catalogErr != nil {
		tb.Fatal(catalogErr)
	}
	return catalog
}

// jsName is a test stand-in for the caller's name mapping (M4):
// create_issue → createIssue, chrome-devtools → chromeDevtools.
func jsName(name string) string {
	parts := strings.FieldsFunc(name, func(r rune) bool { return r == '_' || r == '-' || r == '.' || r == ' ' })
	var b strings.Builder
	for i, p := range parts {
		if i > 0 && p != "" {
			p = strings.ToUpper(p[:1]) + p[1:]
		}
		b.WriteString(p)
	}
	return b.String()
}

// catalogServers groups the catalog into DTSServers, in catalog order.
func catalogServers(tb testing.TB) []DTSServer {
	tb.Helper()
	var servers []DTSServer
	index := map[string]int{}
	for _, c := range loadCatalog(tb) {
		in, err := Parse(c.InputSchema)
		if err != nil {
			tb.Fatalf("%s/%s input: %v", c.Server, c.Name, err)
		}
		var out *Schema
		if len(c.OutputSchema) > 0 {
			if out, err = Parse(c.OutputSchema); err != nil {
				tb.Fatalf("%s/%s output: %v", c.Server, c.Name, err)
			}
		}
		title := c.Title
		if title == "" {
			title = c.Annotations.Title
		}
		i, ok := index[c.Server]
		if !ok {
			i = len(servers)
			index[c.Server] = i
			servers = append(servers, DTSServer{Name: c.Server, JSName: jsName(c.Server)})
		}
		servers[i].Tools = append(servers[i].Tools, DTSTool{
			Name: c.Name, JSName: jsName(c.Name), Title: title, Description: c.Description,
			Input: in, Output: out,
		})
	}
	return servers
}

func serverByName(tb testing.TB, name string) DTSServer {
	tb.Helper()
	for _, s := range catalogServers(tb) {
		if s.Name == name {
			return s
		}
	}
	tb.Fatalf("server %q not in catalog", name)
	return DTSServer{}
}
