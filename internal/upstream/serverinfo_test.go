package upstream

import (
	"context"
	"strings"
	"testing"

	"github.com/codemode-go/codemode/api"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// issue 23 item 3: a server's initialize self-description reaches its tools (for search), bounded.
func TestServerInfoReachesTools(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "weather-srv", Title: "Weather", Description: "Forecasts and climate data", Version: "1"},
		&mcp.ServerOptions{Instructions: "Use forecast for the next days. " + strings.Repeat("x", 10000)})
	for _, name := range []string{"forecast", "alerts"} {
		mcp.AddTool(srv, &mcp.Tool{Name: name, Description: name}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return textResult("ok"), nil, nil
		})
	}
	f := newFixture(t)
	f.addInMemory("wx", srv, 0)
	m := f.startReady()
	tools := m.Tools()
	if len(tools) != 2 {
		t.Fatalf("%d tools", len(tools))
	}
	si := tools[0].Server
	if si == nil || tools[1].Server != si {
		t.Fatalf("server info not shared by the server's tools: %+v %+v", tools[0].Server, tools[1].Server)
	}
	want := api.ServerInfo{Name: "weather-srv", Title: "Weather", Description: "Forecasts and climate data"}
	if si.Name != want.Name || si.Title != want.Title || si.Description != want.Description {
		t.Errorf("server info %+v, want %+v", *si, want)
	}
	if !strings.HasPrefix(si.Instructions, "Use forecast") || len(si.Instructions) > maxServerDescription {
		t.Errorf("instructions not kept or not bounded: %d bytes", len(si.Instructions))
	}
}
