package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/catalog"
	"github.com/codemode-go/codemode/internal/runstore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Principals (issue 19 items 2 and 3). A principal is who a request acts for: a serve.principals
// entry named by its token, an OAuth user (through a serve.oauth.principals rule), the legacy
// serve.http.token ("default"), or nobody (a loopback listener without a token).
//
// Each serve.principals entry is a profile: a tool policy that narrows the gateway's, a limit on
// its calls running at once, and an MCP server of its own (one go-sdk Server per profile, so that
// tools/list, the exec description and the catalog are the principal's). Requests of OAuth
// users share the profile their rule names; the legacy token, unauthenticated clients and OAuth
// without rules use the default profile, which is the gateway's policy unchanged.
//
// Run scope. The principal, not the connection, owns a run whenever one authenticated, in both
// protocol generations: RunContext{Principal: name, SessionKey: "principal:"+name, SessionID:
// the client's conversation key, when it sends one}. Any later request of the same principal —
// another MCP session, a one-shot stateless request, another replica sharing the run store — can
// wait on it; another principal's wait fails as a wrong-session wait does. Such runs belong to no
// session: the run store bounds them by the principal's share (runtime.suspended
// maxRunsPerPrincipal; runstore.Limits.SessionShare), and the admission queue's fairness counts
// per principal. An unauthenticated stateless request is scoped to the principal "anonymous" (a
// loopback listener has one user); an unauthenticated session keeps its session as the scope
// (closing it drops its runs; maxRunsPerSession bounds it).

// ConversationMeta is the `_meta` key of tools/call a client may set to keep its runs apart from
// its other conversations: a run started with one conversation key can be waited on only with the
// same key (and a run started without one, only without one). A client that cannot set _meta
// (MCP Inspector's --cli, which opens a session per call) can put the key in the endpoint's URL
// instead: /mcp?conversation=KEY. A request with a key is scoped to its principal (anonymous on
// a listener without credentials) and the key, never to its session, so one-shot session
// clients can exec and then wait.
const ConversationMeta = "codemode/conversation"

// ConversationQuery is the URL query parameter that carries a conversation key.
const ConversationQuery = "conversation"

// maxConversationKey bounds the conversation key (it is part of every stored run's scope).
const maxConversationKey = 128

// identity is the authenticated principal of a request.
type identity struct {
	// principal is RunContext.Principal: a principal's name, "default" (the legacy token),
	// "oauth:<claim>" for an OAuth user, or "" when nobody authenticated.
	principal string
	prof      *profile
	// client is who a session counts against (serve.http.maxSessionsPerClient): the principal,
	// or "addr:<ip>" for an unauthenticated HTTP request ("" over stdio).
	client string
}

// clientOf is the client an HTTP request counts as: its principal, or its address when it
// carries no credential.
func clientOf(id identity, r *http.Request) string {
	if id.authenticated() {
		return "principal:" + id.principal
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "addr:" + host
}

// authenticated reports whether the request carried a credential the listener accepted.
func (id identity) authenticated() bool { return id.principal != "" }

// label is the principal's name in metrics: the profile's (bounded by the configuration), so
// that OAuth users do not each make a time series.
func (id identity) label() string {
	switch {
	case id.prof != nil && id.prof.name != "":
		return id.prof.name
	case id.principal == "":
		return "anonymous"
	}
	return "default"
}

// profile is one principal policy and the MCP server that serves it.
type profile struct {
	name string // "" for the default profile
	cfg  config.Principal
	srv  *mcp.Server
	agg  *aggregator // the upstreams' prompts and resources this policy sees

	mu      sync.Mutex
	surface *codemode.Surface
	names   map[string]bool            // tools registered on srv
	wire    map[string]json.RawMessage // upstream definitions of the registered tools, by name
	running map[string]int             // execs and waits in flight, by principal
}

// tools applies the profile's policy to the gateway's tools: allow and deny, and direct-only
// marks (on copies). The default profile returns them unchanged.
func (p *profile) tools(all []*api.Tool) []*api.Tool {
	if p.name == "" {
		return all
	}
	pol := catalog.Policy{Allow: p.cfg.Tools.Allow, Deny: p.cfg.Tools.Deny}
	out := make([]*api.Tool, 0, len(all))
	for _, t := range all {
		if t == nil || !pol.Permits(t) {
			continue
		}
		if !t.DirectOnly && slices.ContainsFunc(p.cfg.Tools.DirectOnly, func(n string) bool { return n == t.Name || n == t.ID() }) {
			c := *t
			c.DirectOnly = true
			t = &c
		}
		out = append(out, t)
	}
	return out
}

// noTools reports a profile whose policy gives it no tools at all (allow: []).
func (p *profile) noTools() bool {
	return p.name != "" && p.cfg.Tools.Allow != nil && len(p.cfg.Tools.Allow) == 0
}

// approvals are the profile's rules first, then the gateway's.
func (p *profile) approvals(global api.Approvals) api.Approvals {
	return api.Approvals{ExemptReadOnly: global.ExemptReadOnly || p.cfg.Tools.Approvals.ExemptReadOnly,
		Rules: append(slices.Clone(p.cfg.Tools.Approvals.Rules), global.Rules...)}
}

// errBusy is a call refused by the principal's maxRunning.
var errBusy = errors.New("busy")

// enter counts a call of principal against the profile's maxRunning; leave undoes it.
func (p *profile) enter(principal string) error {
	if p.cfg.MaxRunning <= 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running[principal] >= p.cfg.MaxRunning {
		return errBusy
	}
	p.running[principal]++
	return nil
}

func (p *profile) leave(principal string) {
	if p.cfg.MaxRunning <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running[principal]--; p.running[principal] <= 0 {
		delete(p.running, principal)
	}
}

// newProfiles makes the default profile and one per serve.principals entry.
func (s *Server) newProfiles(cfg *config.Config) {
	s.profiles = map[string]*profile{"": s.newProfile("", config.Principal{})}
	for _, pc := range cfg.Serve.Principals {
		s.profiles[pc.Name] = s.newProfile(pc.Name, pc)
	}
}

func (s *Server) newProfile(name string, pc config.Principal) *profile {
	p := &profile{name: name, cfg: pc, names: map[string]bool{}, wire: map[string]json.RawMessage{}, running: map[string]int{}}
	opts := &mcp.ServerOptions{
		Logger:       s.sdkLog,
		Instructions: "This server exposes code mode: write a short JavaScript program with the exec tool; it can search and call every tool of the gateway (see the exec tool's description). Use wait only with the runId of a waiting result.",
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		// No prompt or resource arguments to complete: an empty answer, rather than "method
		// not found", for clients that ask anyway.
		CompletionHandler: func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
		},
	}
	// The upstreams' prompts and resources, as this policy sees them (aggregate.go).
	aggregatorOptions(opts, p, s.g.Upstreams() != nil)
	p.srv = mcp.NewServer(&mcp.Implementation{Name: "codemode", Title: "codemode gateway", Version: s.version}, opts)
	policies := []catalog.Policy{gatewayPolicy(s.g.Cfg)}
	if name != "" {
		policies = append(policies, catalog.Policy{Allow: pc.Tools.Allow, Deny: pc.Tools.Deny})
	}
	p.agg = newAggregator(s, p.srv, policies...)
	p.srv.AddReceivingMiddleware(s.middleware(p), p.agg.middleware)
	return p
}

// profileFor is the profile of a principal name ("" or unknown: the default).
func (s *Server) profileFor(name string) *profile {
	if p, ok := s.profiles[name]; ok {
		return p
	}
	return s.profiles[""]
}

// runContext is the scope of a tool call's runs (see the comment at the top): the principal
// when one authenticated, else the session (stdio, unauthenticated HTTP sessions), else — a
// stateless request nobody authenticated — "anonymous".
func runContext(id identity, st *session, conv string) api.RunContext {
	rc := api.RunContext{AgentID: "mcp"}
	switch {
	case id.authenticated():
		rc.Principal, rc.SessionKey, rc.SessionID = id.principal, runstore.PrincipalKey(id.principal), conv
	case st != nil && conv == "":
		rc.SessionKey, rc.SessionID = st.key, st.key
	default:
		rc.Principal, rc.SessionKey, rc.SessionID = "anonymous", runstore.PrincipalKey("anonymous"), conv
	}
	return rc
}

// conversationKey is the client's conversation key from a request's _meta, "" when absent or
// not a short printable string.
func conversationKey(meta mcp.Meta) string {
	v, _ := meta[ConversationMeta].(string)
	return validConversation(v)
}

func validConversation(v string) string {
	if v == "" || len(v) > maxConversationKey || strings.ContainsFunc(v, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return ""
	}
	return v
}

// describePrincipal is a principal for messages and logs.
func describePrincipal(id identity) string {
	if !id.authenticated() {
		return "an unauthenticated client"
	}
	return fmt.Sprintf("principal %q", id.principal)
}
