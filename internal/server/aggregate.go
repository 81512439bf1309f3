//lint:file-ignore SA1019 logging and sampling are deprecated by SEP-2577 but still forwarded during its deprecation window (issue 21)

package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/catalog"
	"github.com/codemode-go/codemode/internal/rawjson"
	"github.com/codemode-go/codemode/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
)

// The gateway as an aggregator of its upstreams' prompts and resources (issue 21 item 3), with
// code mode on or off: prompts/list|get, resources/list|read|templates/list|subscribe|unsubscribe
// and their list_changed and updated notifications.
//
// Naming (README, docs/semantics.md "Prompts and resources"):
//
//   - A prompt keeps its own name when no other visible server offers one of that name; when
//     several do, each is listed as "<server>/<name>". "<server>/<name>" is always accepted too,
//     so a client may pin a prompt to its server. Server names cannot contain "/", and a bare
//     name that starts with "<visible server>/" is always listed qualified, so every name maps
//     to exactly one prompt and the upstream receives its own name byte for byte.
//   - A resource or resource template keeps its own URI (clients render URIs natively, resources
//     link to each other by URI, and tool results embed them) unless another visible server lists
//     the same one: then each is listed as "codemode://<server>/<uri>". That form is always
//     accepted, and the upstream receives the URI after the prefix byte for byte. An unlisted URI
//     is read from the one server whose template matches it (or the one server that offers
//     resources at all); when several could serve it the client must use the prefixed form.
//
// Everything else passes through as the upstream sent it: list items are the upstream's own JSON
// with only the name or URI member replaced when it is prefixed, and prompts/get and
// resources/read results are the upstream's bytes. Policy applies per server: a server is
// visible when the tool policy (tools.allow, tools.deny, and a principal's own) permits one of its
// tools, or it has no tools and the policy would permit one ("mcp:<server>:*"), so a denied
// server's prompts and resources are absent and cannot be reached by a guessed name or URI.

// resourcePrefix is the scheme of the prefixed form of resource URIs.
const resourcePrefix = "codemode://"

// maxSubscriptions bounds the resource subscriptions of the whole gateway (each is one upstream
// subscription and one entry per subscribed session).
const maxSubscriptions = 4096

type promptRoute struct {
	server, name string
	wire         json.RawMessage // the upstream's item, name member as listed here
}

type resourceRoute struct {
	server, uri string
	wire        json.RawMessage
}

type templateRoute struct {
	server, tmpl string
	wire         json.RawMessage
	re           *uritemplate.Template
}

// aggregator serves one SDK server's prompts and resources.
type aggregator struct {
	s   *Server
	srv *mcp.Server
	up  *upstream.Manager
	// policies are the tool policies that decide which servers are visible.
	policies []catalog.Policy

	mu        sync.Mutex
	visible   map[string]bool
	resOwners []string // visible servers with resources or templates
	prompts   map[string]promptRoute
	resources map[string]resourceRoute
	ambiguous map[string][]string // a bare URI several servers list → their prefixed forms
	templates []templateRoute
	// subs maps a URI a client subscribed to → its route and the sessions subscribed.
	subs   map[string]*subscription
	levels map[*mcp.ServerSession]mcp.LoggingLevel
}

type subscription struct {
	server, uri string
	sessions    map[*mcp.ServerSession]bool
}

func newAggregator(s *Server, srv *mcp.Server, policies ...catalog.Policy) *aggregator {
	a := &aggregator{s: s, srv: srv, up: s.g.Upstreams(), policies: policies,
		prompts: map[string]promptRoute{}, resources: map[string]resourceRoute{},
		subs: map[string]*subscription{}, levels: map[*mcp.ServerSession]mcp.LoggingLevel{}}
	return a
}

// capabilities adds what the aggregator serves to an SDK server's options.
func aggregatorOptions(o *mcp.ServerOptions, p *profile, hasUpstreams bool) {
	if o.Capabilities == nil {
		o.Capabilities = &mcp.ServerCapabilities{}
	}
	o.Capabilities.Logging = &mcp.LoggingCapabilities{}
	// Subscriptions are answered either way (an unknown resource is -32002, not -32601). Each
	// profile's SDK server has its own aggregator (made right after these options are used).
	o.SubscribeHandler = func(ctx context.Context, req *mcp.SubscribeRequest) error { return p.agg.subscribe(ctx, req) }
	o.UnsubscribeHandler = func(ctx context.Context, req *mcp.UnsubscribeRequest) error { return p.agg.unsubscribe(ctx, req) }
	if hasUpstreams {
		o.Capabilities.Prompts = &mcp.PromptCapabilities{ListChanged: true}
		o.Capabilities.Resources = &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true}
	}
}

// visibleServers applies the policy to the upstreams (see the comment at the top). It asks the
// policy, not the surface: a server whose tools are all shadowed by another server's tools of the
// same names (code mode off) is still allowed.
func (a *aggregator) visibleServers() map[string]bool {
	permits := func(t *api.Tool) bool {
		for _, p := range a.policies {
			if !p.Permits(t) {
				return false
			}
		}
		return true
	}
	out := map[string]bool{}
	hasTools := map[string]bool{}
	for _, t := range a.s.g.Tools() {
		if t.Source != api.SourceMCP {
			continue
		}
		hasTools[t.Owner] = true
		if permits(t) {
			out[t.Owner] = true
		}
	}
	for _, st := range a.up.Status() {
		if st.Enabled && !hasTools[st.Name] && permits(&api.Tool{Source: api.SourceMCP, Owner: st.Name, Name: "*"}) {
			out[st.Name] = true
		}
	}
	return out
}

// refresh rebuilds the prompts and resources from the upstreams for the surface now served and
// updates the SDK server's lists (its clients get list_changed when something changed).
func (a *aggregator) refresh(surf *codemode.Surface) {
	if a.up == nil || surf == nil {
		return
	}
	vis := a.visibleServers()
	keep := func(items []upstream.Item) []upstream.Item {
		return slices.DeleteFunc(slices.Clone(items), func(it upstream.Item) bool { return !vis[it.Server] })
	}
	prompts, resources, templates := keep(a.up.Prompts()), keep(a.up.Resources()), keep(a.up.ResourceTemplates())

	// Prompt names.
	count := map[string]int{}
	for _, p := range prompts {
		count[p.Key]++
	}
	nextPrompts := map[string]promptRoute{}
	for _, p := range prompts {
		name := p.Key
		if count[name] > 1 || startsWithServer(name, vis) {
			name = p.Server + "/" + p.Key
		}
		if _, dup := nextPrompts[name]; dup {
			continue
		}
		nextPrompts[name] = promptRoute{server: p.Server, name: p.Key, wire: setMember(p.Wire, "name", name)}
	}

	// Resource URIs and templates.
	nextRes := map[string]resourceRoute{}
	ambiguous := map[string][]string{}
	count = map[string]int{}
	owners := map[string]bool{}
	for _, r := range resources {
		count[r.Key]++
		owners[r.Server] = true
	}
	for _, r := range resources {
		uri := r.Key
		if count[uri] > 1 || strings.HasPrefix(uri, resourcePrefix) {
			uri = resourcePrefix + r.Server + "/" + r.Key
			ambiguous[r.Key] = append(ambiguous[r.Key], uri)
		}
		if _, dup := nextRes[uri]; !dup {
			nextRes[uri] = resourceRoute{server: r.Server, uri: r.Key, wire: setMember(r.Wire, "uri", uri)}
		}
	}
	count = map[string]int{}
	for _, t := range templates {
		count[t.Key]++
	}
	var nextTmpl []templateRoute
	for _, t := range templates {
		tmpl := t.Key
		if count[tmpl] > 1 || strings.HasPrefix(tmpl, resourcePrefix) {
			tmpl = resourcePrefix + t.Server + "/" + t.Key
		}
		re, err := uritemplate.New(t.Key)
		if err != nil {
			continue // the SDK would refuse it as well
		}
		owners[t.Server] = true
		nextTmpl = append(nextTmpl, templateRoute{server: t.Server, tmpl: tmpl, wire: setMember(t.Wire, "uriTemplate", tmpl), re: re})
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	a.visible = vis
	a.resOwners = a.resOwners[:0]
	for srv := range owners {
		a.resOwners = append(a.resOwners, srv)
	}
	slices.Sort(a.resOwners)
	a.ambiguous = ambiguous

	var gone []string
	for name := range a.prompts {
		if _, ok := nextPrompts[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		a.srv.RemovePrompts(gone...)
	}
	for name, r := range nextPrompts {
		if old, ok := a.prompts[name]; ok && bytes.Equal(old.wire, r.wire) && old.server == r.server {
			continue
		}
		var p mcp.Prompt
		if json.Unmarshal(r.wire, &p) != nil {
			delete(nextPrompts, name)
			continue
		}
		p.Name = name
		a.srv.AddPrompt(&p, a.promptHandler)
	}
	a.prompts = nextPrompts

	gone = gone[:0]
	for uri := range a.resources {
		if _, ok := nextRes[uri]; !ok {
			gone = append(gone, uri)
		}
	}
	if len(gone) > 0 {
		a.srv.RemoveResources(gone...)
	}
	for uri, r := range nextRes {
		if old, ok := a.resources[uri]; ok && bytes.Equal(old.wire, r.wire) && old.server == r.server {
			continue
		}
		var res mcp.Resource
		if json.Unmarshal(r.wire, &res) != nil || !a.add(func() { res.URI = uri; a.srv.AddResource(&res, a.readHandler) }) {
			delete(nextRes, uri)
		}
	}
	a.resources = nextRes

	oldTmpl := map[string]templateRoute{}
	for _, t := range a.templates {
		oldTmpl[t.tmpl] = t
	}
	nextSet := map[string]bool{}
	kept := nextTmpl[:0]
	for _, t := range nextTmpl {
		if nextSet[t.tmpl] {
			continue
		}
		if old, ok := oldTmpl[t.tmpl]; ok && bytes.Equal(old.wire, t.wire) && old.server == t.server {
			nextSet[t.tmpl] = true
			kept = append(kept, t)
			continue
		}
		var rt mcp.ResourceTemplate
		if json.Unmarshal(t.wire, &rt) != nil || !a.add(func() { rt.URITemplate = t.tmpl; a.srv.AddResourceTemplate(&rt, a.readHandler) }) {
			continue
		}
		nextSet[t.tmpl] = true
		kept = append(kept, t)
	}
	gone = gone[:0]
	for tmpl := range oldTmpl {
		if !nextSet[tmpl] {
			gone = append(gone, tmpl)
		}
	}
	if len(gone) > 0 {
		a.srv.RemoveResourceTemplates(gone...)
	}
	a.templates = kept
}

// add runs an SDK registration that panics on what it refuses (an upstream's item is untrusted).
func (a *aggregator) add(f func()) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			a.s.log.Warn("MCP server resource not served: the MCP SDK refused it", "err", fmt.Sprint(r))
			ok = false
		}
	}()
	f()
	return true
}

func startsWithServer(name string, vis map[string]bool) bool {
	srv, _, ok := strings.Cut(name, "/")
	return ok && vis[srv]
}

// routePrompt resolves a prompt name to its server and the server's own name for it.
func (a *aggregator) routePrompt(name string) (server, upName string, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r, ok := a.prompts[name]; ok {
		return r.server, r.name, true
	}
	if srv, rest, ok := strings.Cut(name, "/"); ok && a.visible[srv] && rest != "" {
		for _, r := range a.prompts {
			if r.server == srv && r.name == rest {
				return srv, rest, true
			}
		}
	}
	return "", "", false
}

// routeResource resolves a URI to its server and the server's own URI.
func (a *aggregator) routeResource(uri string) (server, upURI string, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if rest, ok := strings.CutPrefix(uri, resourcePrefix); ok {
		if srv, u, ok := strings.Cut(rest, "/"); ok && a.visible[srv] && u != "" {
			return srv, u, nil
		}
	}
	if r, ok := a.resources[uri]; ok {
		return r.server, r.uri, nil
	}
	if alts := a.ambiguous[uri]; len(alts) > 0 {
		return "", "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("several MCP servers offer %s: read one of %s", uri, strings.Join(alts, ", "))}
	}
	var match []string
	for _, t := range a.templates {
		if !strings.HasPrefix(t.tmpl, resourcePrefix) && t.re.Regexp().MatchString(uri) && !slices.Contains(match, t.server) {
			match = append(match, t.server)
		}
	}
	switch {
	case len(match) == 1:
		return match[0], uri, nil
	case len(match) > 1:
		return "", "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("the resource templates of several MCP servers (%s) match %s: use %s<server>/%s", strings.Join(match, ", "), uri, resourcePrefix, uri)}
	case len(a.resOwners) == 1:
		return a.resOwners[0], uri, nil
	}
	return "", "", mcp.ResourceNotFoundError(uri)
}

// middleware serves prompts/get and resources/read with the upstream's bytes, lists with the
// upstream's items, and forwards logging/setLevel.
func (a *aggregator) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "prompts/get":
			r, ok := req.(*mcp.GetPromptRequest)
			if !ok || r.Params == nil {
				break
			}
			raw, err := a.getPrompt(ctx, r)
			if err != nil {
				return nil, err
			}
			return &rawPrompt{GetPromptResult: &mcp.GetPromptResult{}, raw: raw}, nil
		case "resources/read":
			r, ok := req.(*mcp.ReadResourceRequest)
			if !ok || r.Params == nil {
				break
			}
			raw, err := a.readResource(ctx, r)
			if err != nil {
				return nil, err
			}
			return &rawRead{ReadResourceResult: &mcp.ReadResourceResult{}, raw: raw}, nil
		case "prompts/list", "resources/list", "resources/templates/list":
			res, err := next(ctx, method, req)
			if err != nil || res == nil {
				return res, err
			}
			return a.rawListResult(method, res), nil
		case "logging/setLevel":
			res, err := next(ctx, method, req)
			if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && err == nil && p != nil {
				ss, _ := req.GetSession().(*mcp.ServerSession)
				a.setLevel(ctx, ss, p.Level)
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}

// getPrompt forwards prompts/get to the prompt's server.
func (a *aggregator) getPrompt(ctx context.Context, r *mcp.GetPromptRequest) (json.RawMessage, error) {
	srv, name, ok := a.routePrompt(r.Params.Name)
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", r.Params.Name)}
	}
	args, _ := json.Marshal(r.Params.Arguments)
	raw, err := a.up.GetPrompt(a.s.callContext(ctx, r), srv, name, args)
	if err != nil {
		return nil, upstreamError(err)
	}
	return raw, nil
}

// readResource forwards resources/read to the resource's server.
func (a *aggregator) readResource(ctx context.Context, r *mcp.ReadResourceRequest) (json.RawMessage, error) {
	srv, uri, err := a.routeResource(r.Params.URI)
	if err != nil {
		return nil, err
	}
	raw, err := a.up.ReadResource(a.s.callContext(ctx, r), srv, uri)
	if err != nil {
		return nil, upstreamError(err)
	}
	return raw, nil
}

// upstreamError keeps an upstream's JSON-RPC error (resource not found is -32002) and wraps
// anything else.
func upstreamError(err error) error {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return &jsonrpc.Error{Code: je.Code, Message: err.Error(), Data: je.Data}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// promptHandler and readHandler serve the SDK's decoded path (a server without the middleware).
func (a *aggregator) promptHandler(ctx context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	raw, err := a.getPrompt(ctx, r)
	if err != nil {
		return nil, err
	}
	var out mcp.GetPromptResult
	return &out, json.Unmarshal(raw, &out)
}

func (a *aggregator) readHandler(ctx context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	raw, err := a.readResource(ctx, r)
	if err != nil {
		return nil, err
	}
	var out mcp.ReadResourceResult
	return &out, json.Unmarshal(raw, &out)
}

// rawListResult replaces a list result's items by the upstreams' own JSON.
func (a *aggregator) rawListResult(method string, res mcp.Result) mcp.Result {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch method {
	case "prompts/list":
		wire := make(map[string]json.RawMessage, len(a.prompts))
		for name, r := range a.prompts {
			wire[name] = r.wire
		}
		return &rawItems{Result: res, field: "prompts", key: "name", wire: wire}
	case "resources/list":
		wire := make(map[string]json.RawMessage, len(a.resources))
		for uri, r := range a.resources {
			wire[uri] = r.wire
		}
		return &rawItems{Result: res, field: "resources", key: "uri", wire: wire}
	default:
		wire := make(map[string]json.RawMessage, len(a.templates))
		for _, t := range a.templates {
			wire[t.tmpl] = t.wire
		}
		return &rawItems{Result: res, field: "resourceTemplates", key: "uriTemplate", wire: wire}
	}
}

// setLevel forwards the most verbose level any live session of any profile asked for to the
// upstreams (each session still gets only its own level: the SDK filters per session).
func (a *aggregator) setLevel(ctx context.Context, ss *mcp.ServerSession, level mcp.LoggingLevel) {
	if a.up == nil || ss == nil {
		return
	}
	a.mu.Lock()
	a.levels[ss] = level
	a.mu.Unlock()
	most := level
	for _, p := range a.s.profiles {
		if l, ok := p.agg.mostVerbose(); ok && levelRank(l) < levelRank(most) {
			most = l
		}
	}
	a.up.SetLogLevel(context.WithoutCancel(ctx), string(most))
}

// mostVerbose is the most verbose level the live sessions of this server asked for.
func (a *aggregator) mostVerbose() (mcp.LoggingLevel, bool) {
	live := map[*mcp.ServerSession]bool{}
	for x := range a.srv.Sessions() {
		live[x] = true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var most mcp.LoggingLevel
	for x, l := range a.levels {
		if !live[x] {
			delete(a.levels, x)
			continue
		}
		if most == "" || levelRank(l) < levelRank(most) {
			most = l
		}
	}
	return most, most != ""
}

func levelRank(l mcp.LoggingLevel) int {
	i := slices.Index([]mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}, l)
	if i < 0 {
		return 100
	}
	return i
}

// subscribe subscribes a session to a resource (the SDK records the session; the upstream is
// subscribed once for all sessions).
func (a *aggregator) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	srv, uri, err := a.routeResource(req.Params.URI)
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.prune()
	sub := a.subs[req.Params.URI]
	first := sub == nil
	if first {
		if len(a.subs) >= maxSubscriptions {
			a.mu.Unlock()
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "too many resource subscriptions on this gateway"}
		}
		sub = &subscription{server: srv, uri: uri, sessions: map[*mcp.ServerSession]bool{}}
		a.subs[req.Params.URI] = sub
	}
	sub.sessions[req.Session] = true
	a.mu.Unlock()
	if !first {
		return nil
	}
	if err := a.up.Subscribe(a.s.callContext(ctx, req), srv, uri); err != nil {
		a.mu.Lock()
		delete(a.subs, req.Params.URI)
		a.mu.Unlock()
		return upstreamError(err)
	}
	return nil
}

// unsubscribe ends a session's subscription, and the upstream's with the last one.
func (a *aggregator) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	a.mu.Lock()
	if sub := a.subs[req.Params.URI]; sub != nil {
		delete(sub.sessions, req.Session)
	}
	gone := a.prune()
	a.mu.Unlock()
	for _, g := range gone {
		_ = a.up.Unsubscribe(context.WithoutCancel(ctx), g.server, g.uri)
	}
	return nil
}

// prune drops ended sessions from the subscriptions and returns those left without any (a.mu
// held; the caller unsubscribes them upstream).
func (a *aggregator) prune() []*subscription {
	live := map[*mcp.ServerSession]bool{}
	for x := range a.srv.Sessions() {
		live[x] = true
	}
	var gone []*subscription
	for key, sub := range a.subs {
		for x := range sub.sessions {
			if !live[x] {
				delete(sub.sessions, x)
			}
		}
		if len(sub.sessions) == 0 {
			delete(a.subs, key)
			gone = append(gone, sub)
		}
	}
	return gone
}

// updated relays an upstream's notifications/resources/updated to the sessions subscribed to
// that resource, under the URI each subscribed with.
func (a *aggregator) updated(server, uri string) {
	a.mu.Lock()
	var keys []string
	for key, sub := range a.subs {
		if sub.server == server && sub.uri == uri {
			keys = append(keys, key)
		}
	}
	a.mu.Unlock()
	for _, k := range keys {
		_ = a.srv.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: k})
	}
}

// rawPrompt and rawRead are results sent as the upstream's bytes (like rawResult for tools).
type rawPrompt struct {
	*mcp.GetPromptResult
	raw json.RawMessage
}

func (r *rawPrompt) MarshalJSON() ([]byte, error) {
	typed, err := json.Marshal(r.GetPromptResult)
	if err != nil {
		return nil, err
	}
	return mergeExtra(r.raw, typed, "messages", "description")
}

type rawRead struct {
	*mcp.ReadResourceResult
	raw json.RawMessage
}

func (r *rawRead) MarshalJSON() ([]byte, error) {
	typed, err := json.Marshal(r.ReadResourceResult)
	if err != nil {
		return nil, err
	}
	return mergeExtra(r.raw, typed, "contents")
}

// rawItems is a list result whose items are replaced by their upstream definitions, by key.
type rawItems struct {
	mcp.Result
	field, key string
	wire       map[string]json.RawMessage
}

func (l *rawItems) MarshalJSON() ([]byte, error) {
	typed, err := json.Marshal(l.Result)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(typed, &m); err != nil {
		return nil, err
	}
	var items []json.RawMessage
	if err := json.Unmarshal(m[l.field], &items); err != nil {
		return typed, nil
	}
	for i, it := range items {
		var k map[string]json.RawMessage
		var key string
		if json.Unmarshal(it, &k) == nil && json.Unmarshal(k[l.key], &key) == nil {
			if w, ok := l.wire[key]; ok {
				items[i] = w
			}
		}
	}
	b, err := json.Marshal(items)
	if err != nil {
		return nil, err
	}
	m[l.field] = b
	return json.Marshal(m)
}

// setMember returns the JSON object raw with its (first) string member key set to value, every
// other key and value kept byte for byte and in order. raw is returned unchanged when it already
// says value, has no such member, or is not an object.
func setMember(raw json.RawMessage, key, value string) json.RawMessage {
	ms, ok := rawjson.Members(raw)
	if !ok {
		return raw
	}
	for i, m := range ms {
		if m.Key != key {
			continue
		}
		var cur string
		if json.Unmarshal(m.Value, &cur) == nil && cur == value {
			return raw
		}
		ms[i].Value = rawjson.String(value)
		return rawjson.Object(ms)
	}
	return raw
}

// gatewayPolicy is the configuration's tool policy (tools.allow and tools.deny).
func gatewayPolicy(cfg *config.Config) catalog.Policy {
	if cfg == nil {
		return catalog.Policy{}
	}
	return catalog.Policy{Allow: cfg.Tools.Allow, Deny: cfg.Tools.Deny, DisableTools: cfg.Tools.DisableTools}
}

// watchUpdates relays the upstreams' resource updates to every profile's subscribers (set
// once, at New).
func (s *Server) watchUpdates() {
	if up := s.g.Upstreams(); up != nil {
		up.OnResourceUpdated(func(server, uri string) {
			for _, p := range s.profiles {
				p.agg.updated(server, uri)
			}
		})
	}
}
