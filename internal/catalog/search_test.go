package catalog

import (
	"strings"
	"testing"

	"github.com/codemode-go/codemode/api"
)

// issue 23 items 3 and 5: hits explain themselves, carry their server, honour {server}, and a
// server's self-description is evidence for its tools.
func TestSearchHits(t *testing.T) {
	wx := &api.ServerInfo{Name: "weather-srv", Description: "Meteorology: forecasts, storms and climate"}
	tools := []*api.Tool{
		{Name: "read", Owner: api.CoreOwner, Description: "Read a file"},
		{Name: "log", Owner: "git", Description: "Show the commit log"},
		{Name: "get_data", Source: api.SourceMCP, Owner: "wx", Description: "Get data for a place", Server: wx},
		{Name: "get_data", Source: api.SourceMCP, Owner: "stocks", Description: "Get data for a ticker"},
	}
	c := Build(tools)

	hits := c.SearchHits("read a file", 5, "")
	if len(hits) == 0 || hits[0].Entry.ID != "native:core:read" || !strings.Contains(hits[0].Why, "matched") || !strings.Contains(hits[0].Why, "read") {
		t.Fatalf("hits %+v", hits)
	}
	if h := c.SearchHits("commit log", 5, "core"); len(h) != 0 {
		t.Errorf("server filter core returned %v", h[0].Entry.ID)
	}
	if h := c.SearchHits("commit log", 5, "git"); len(h) != 1 || h[0].Entry.ID != "native:git:log" {
		t.Errorf("server filter git: %+v", h)
	}

	// The two get_data tools say the same; the forecast server's own description decides.
	h := c.SearchMCPHits("get data for tomorrow's storm forecast", 2, "")
	if len(h) != 2 || h[0].Entry.ID != "mcp:wx:get_data" || !strings.Contains(h[0].Why, "server wx matches the query") {
		t.Fatalf("server evidence: %+v", h)
	}
	if strings.Contains(h[1].Why, "server") {
		t.Errorf("the other server did not match: %q", h[1].Why)
	}
	if h := c.SearchMCPHits("get data", 5, "stocks"); len(h) != 1 || h[0].Entry.Tool.Owner != "stocks" {
		t.Errorf("MCP server filter: %+v", h)
	}
}
