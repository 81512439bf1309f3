// Package server is `codemode serve`: an MCP server whose tools are the code-mode surface (exec,
// wait and the direct-only tools) in front of the gateway's tool sources. Any MCP client — Claude,
// Codex, Cursor — then gets code mode over every configured MCP server and built-in tool.
package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/gateway"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server serves one gateway over MCP.
type Server struct {
	g   *gateway.Gateway
	log *slog.Logger
	srv *mcp.Server

	mu      sync.Mutex
	surface *codemode.Surface
	names   map[string]bool // tools currently registered on srv
	calls   atomic.Int64

	sessMu   sync.Mutex
	sessions map[*mcp.ServerSession]string
	nextSess atomic.Int64
	debug    debugFlags
}

// Version is reported to clients in serverInfo.
var Version = "dev"

// New creates the MCP server and registers the current surface.
func New(g *gateway.Gateway, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{g: g, log: log, names: map[string]bool{}, sessions: map[*mcp.ServerSession]string{}, debug: debugFromEnv()}
	var sdkLog *slog.Logger
	if s.debug.transport {
		sdkLog = log
	}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "codemode", Title: "codemode gateway", Version: Version}, &mcp.ServerOptions{
		Logger:       sdkLog,
		Instructions: "This server exposes code mode: write a short JavaScript program with the exec tool; it can search and call every tool of the gateway (see the exec tool's description). Use wait only with the runId of a waiting result.",
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	s.refresh()
	return s
}

// MCP returns the underlying SDK server.
func (s *Server) MCP() *mcp.Server { return s.srv }

// refresh re-activates the surface from the gateway's current tools and updates the tool list
// (clients get notifications/tools/list_changed).
func (s *Server) refresh() {
	surf := s.g.Surface(api.RunContext{AgentID: "mcp"}, nil)
	if err := surf.CheckPayload(surf.ToolNames()); err != nil {
		// Never expected (Activate builds the list), but never serve a list that fails it.
		s.log.Error("refusing the tool surface", "err", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.surface = surf
	tools := surf.Tools()
	next := map[string]bool{}
	for _, t := range tools {
		next[t.Name] = true
	}
	var gone []string
	for n := range s.names {
		if !next[n] {
			gone = append(gone, n)
		}
	}
	if len(gone) > 0 {
		s.srv.RemoveTools(gone...)
	}
	for _, t := range tools {
		s.srv.AddTool(&mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}, s.handler(t.Name))
	}
	s.names = next
	s.debug.logSurface(s.log, surf)
}

// sessionKey gives each client session its own scope for suspended runs (W3).
func (s *Server) sessionKey(ss *mcp.ServerSession) string {
	if ss == nil {
		return "mcp"
	}
	if id := ss.ID(); id != "" {
		return "mcp:" + id
	}
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	k, ok := s.sessions[ss]
	if !ok {
		k = fmt.Sprintf("mcp:session-%d", s.nextSess.Add(1))
		s.sessions[ss] = k
	}
	return k
}

func (s *Server) handler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.mu.Lock()
		surf := s.surface
		s.mu.Unlock()
		key := s.sessionKey(req.Session)
		run := surf.ForRun(api.RunContext{AgentID: "mcp", SessionKey: key, SessionID: key})
		callID := fmt.Sprintf("%s-%d", name, s.calls.Add(1))
		res := run.Handle(ctx, callID, name, req.Params.Arguments)
		switch {
		case res.Exec != nil:
			s.debug.logResult(s.log, name, callID, *res.Exec)
			return execResult(*res.Exec), nil
		case res.Err != nil:
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: res.Err.Error()}}}, nil
		}
		return toolResult(res.Tool), nil
	}
}

// execResult renders the CodeModeResult as MCP: the JSON in a text block (what most clients show
// the model) and as structured content.
func execResult(res api.ExecResult) *mcp.CallToolResult {
	b, err := json.Marshal(res)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"status": "failed", "error": "cannot encode result: " + err.Error(), "code": api.CodeInternal})
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(b)}},
		StructuredContent: json.RawMessage(b),
		IsError:           res.Status == api.StatusFailed,
	}
}

func toolResult(r *api.Result) *mcp.CallToolResult {
	out := &mcp.CallToolResult{IsError: r.IsError}
	for _, c := range r.Content {
		switch c.Type {
		case "image":
			out.Content = append(out.Content, &mcp.ImageContent{Data: []byte(c.Data), MIMEType: c.MimeType})
		case "audio":
			out.Content = append(out.Content, &mcp.AudioContent{Data: []byte(c.Data), MIMEType: c.MimeType})
		default:
			out.Content = append(out.Content, &mcp.TextContent{Text: c.Text})
		}
	}
	if out.Content == nil {
		out.Content = []mcp.Content{}
	}
	if len(r.Details) > 0 {
		out.StructuredContent = r.Details
	}
	return out
}

// Run serves one MCP connection (stdio) until it closes or ctx ends, refreshing the tool list
// whenever the gateway's tools change.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go s.watch(ctx)
	return s.srv.Run(ctx, t)
}

// Handler serves MCP over streamable HTTP.
func (s *Server) Handler(ctx context.Context) http.Handler {
	go s.watch(ctx)
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv }, nil)
}

func (s *Server) watch(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.g.Changed():
			s.refresh()
		}
	}
}
