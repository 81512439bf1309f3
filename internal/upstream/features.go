//lint:file-ignore SA1019 logging and sampling are deprecated by SEP-2577 but still forwarded during its deprecation window (issue 21)

package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"unicode/utf8"

	"github.com/codemode-go/codemode/internal/relay"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Prompts and resources for the gateway (issue 21 item 3). Each server's prompts, resources and
// resource templates are listed when it connects and again on its list_changed notifications,
// kept as the server sent them (each item's own bytes), and offered by Prompts, Resources and
// ResourceTemplates; the MCP server (internal/server) names them for its clients and forwards
// prompts/get, resources/read and subscriptions here. Like tool definitions they are untrusted:
// the number of items, their size and their keys are bounded.

// Bounds on listed prompts and resources.
const (
	maxItemsPerList = 1000
	maxItemBytes    = 64 << 10
	maxKeyBytes     = 2048 // a prompt name, resource URI or URI template
)

// Item is one prompt, resource or resource template of a server, as the server listed it.
type Item struct {
	Server string
	// Key is the prompt's name, the resource's uri or the template's uriTemplate.
	Key string
	// Wire is the item's JSON as the server sent it (compacted).
	Wire json.RawMessage
}

// features are the lists of one session.
type features struct {
	prompts, resources, templates []Item
}

// featureState is a server's state for prompts and resources.
type featureState struct {
	changed chan struct{} // list_changed arrived (coalesced)
	mu      sync.Mutex
	subs    map[string]bool // URIs subscribed upstream (kept across reconnects)
}

// featuresChanged is called on prompts/list_changed and resources/list_changed.
func (s *server) featuresChanged() {
	select {
	case s.feat.changed <- struct{}{}:
	default:
	}
}

// watchFeatures lists a session's prompts and resources again whenever the server says they
// changed, until the session ends.
func (s *server) watchFeatures(sess *session) {
	defer s.m.wg.Done()
	for {
		select {
		case <-sess.ctx.Done():
			return
		case <-sess.done:
			return
		case <-s.feat.changed:
			ctx, cancel := context.WithTimeout(sess.ctx, s.cfg.Timeout())
			s.fetchFeatures(ctx, sess)
			cancel()
			s.m.notify()
		}
	}
}

// fetchFeatures lists what the server declared; a failed list keeps the previous one.
func (s *server) fetchFeatures(ctx context.Context, sess *session) {
	caps := &mcp.ServerCapabilities{}
	if ir := sess.cs.InitializeResult(); ir != nil && ir.Capabilities != nil {
		caps = ir.Capabilities
	}
	old := sess.features.Load()
	next := &features{}
	if old != nil {
		*next = *old
	}
	if caps.Prompts != nil {
		if items, err := s.listItems(ctx, sess, "prompts/list", "prompts", "name", func(ctx context.Context, cursor string) (string, error) {
			res, err := sess.cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
			if err != nil {
				return "", err
			}
			return res.NextCursor, nil
		}); err == nil {
			next.prompts = items
		} else {
			s.log.Warn("MCP server prompts/list failed", "err", s.red.scrub(err))
		}
	}
	if caps.Resources != nil {
		if items, err := s.listItems(ctx, sess, "resources/list", "resources", "uri", func(ctx context.Context, cursor string) (string, error) {
			res, err := sess.cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
			if err != nil {
				return "", err
			}
			return res.NextCursor, nil
		}); err == nil {
			next.resources = items
		} else {
			s.log.Warn("MCP server resources/list failed", "err", s.red.scrub(err))
		}
		if items, err := s.listItems(ctx, sess, "resources/templates/list", "resourceTemplates", "uriTemplate", func(ctx context.Context, cursor string) (string, error) {
			res, err := sess.cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
			if err != nil {
				return "", err
			}
			return res.NextCursor, nil
		}); err == nil {
			next.templates = items
		} else {
			s.log.Debug("MCP server resources/templates/list failed", "err", s.red.scrub(err))
		}
	}
	sess.features.Store(next)
}

// listItems pages through one list, capturing each page's raw bytes and keeping the items whose
// key field is a bounded, valid string (the first of each key wins).
func (s *server) listItems(ctx context.Context, sess *session, method, field, keyField string, page func(ctx context.Context, cursor string) (string, error)) ([]Item, error) {
	out := []Item{}
	seen := map[string]bool{}
	cursors := map[string]bool{}
	cursor := ""
	for range maxListPages {
		cp := &capture{}
		next, err := page(withCapture(ctx, cp), cursor)
		sess.tr.release(cp)
		if err != nil {
			return nil, err
		}
		raw, _ := cp.get()
		var pg map[string]json.RawMessage
		var items []json.RawMessage
		if raw != nil && json.Unmarshal(raw, &pg) == nil {
			_ = json.Unmarshal(pg[field], &items)
		}
		for _, w := range items {
			if len(out) == maxItemsPerList {
				s.log.Warn("MCP server lists too many items; keeping the first ones", "method", method, "kept", maxItemsPerList)
				return out, nil
			}
			var k map[string]json.RawMessage
			var key string
			if len(w) > maxItemBytes || json.Unmarshal(w, &k) != nil || json.Unmarshal(k[keyField], &key) != nil ||
				key == "" || len(key) > maxKeyBytes || !utf8.ValidString(key) || seen[key] {
				continue
			}
			var c bytes.Buffer
			if json.Compact(&c, w) != nil {
				continue
			}
			seen[key] = true
			out = append(out, Item{Server: s.name, Key: key, Wire: c.Bytes()})
		}
		if next == "" || cursors[next] {
			break
		}
		cursors[next] = true
		cursor = next
	}
	return out, nil
}

// items returns one list of every ready server, in server-name order.
func (m *Manager) items(pick func(*features) []Item) []Item {
	var out []Item
	for _, s := range m.servers {
		s.mu.Lock()
		sess := s.sess
		s.mu.Unlock()
		if sess == nil {
			continue
		}
		if f := sess.features.Load(); f != nil {
			out = append(out, pick(f)...)
		}
	}
	return out
}

// Prompts returns the prompts of every ready server, in server-name order and then in each
// server's own order. The items are shared and must not be modified.
func (m *Manager) Prompts() []Item { return m.items(func(f *features) []Item { return f.prompts }) }

// Resources returns the listed resources of every ready server, like Prompts.
func (m *Manager) Resources() []Item {
	return m.items(func(f *features) []Item { return f.resources })
}

// ResourceTemplates returns the resource templates of every ready server, like Prompts.
func (m *Manager) ResourceTemplates() []Item {
	return m.items(func(f *features) []Item { return f.templates })
}

// Subscribe subscribes to a resource's updates on the server (resources/subscribe); the
// subscription is renewed when the server reconnects. Updates reach OnResourceUpdated.
func (m *Manager) Subscribe(ctx context.Context, server, uri string) error {
	s, sess, err := m.lookup(server)
	if s != nil {
		s.feat.mu.Lock()
		if s.feat.subs == nil {
			s.feat.subs = map[string]bool{}
		}
		s.feat.subs[uri] = true
		s.feat.mu.Unlock()
	}
	if err != nil {
		return err
	}
	_, err = s.request(ctx, sess, "resources/subscribe", func(ctx context.Context) (any, error) {
		return struct{}{}, sess.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	})
	return err
}

// Unsubscribe ends a subscription made with Subscribe.
func (m *Manager) Unsubscribe(ctx context.Context, server, uri string) error {
	s, sess, err := m.lookup(server)
	if s != nil {
		s.feat.mu.Lock()
		delete(s.feat.subs, uri)
		s.feat.mu.Unlock()
	}
	if err != nil {
		return err
	}
	_, err = s.request(ctx, sess, "resources/unsubscribe", func(ctx context.Context) (any, error) {
		return struct{}{}, sess.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	})
	return err
}

// resubscribe renews a new session's subscriptions.
func (s *server) resubscribe(ctx context.Context, sess *session) {
	s.feat.mu.Lock()
	uris := make([]string, 0, len(s.feat.subs))
	for u := range s.feat.subs {
		uris = append(uris, u)
	}
	s.feat.mu.Unlock()
	for _, u := range uris {
		if err := sess.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: u}); err != nil {
			s.log.Warn("MCP server resources/subscribe failed after reconnecting", "uri", clip(u, 256), "err", s.red.scrub(err))
		}
	}
}

// OnResourceUpdated sets the function that receives every server's
// notifications/resources/updated (server name and URI). Set it before serving clients.
func (m *Manager) OnResourceUpdated(fn func(server, uri string)) {
	m.hookMu.Lock()
	m.updated = fn
	m.hookMu.Unlock()
}

func (m *Manager) resourceUpdated(server, uri string) {
	m.hookMu.Lock()
	fn := m.updated
	m.hookMu.Unlock()
	if fn != nil && uri != "" && len(uri) <= maxKeyBytes {
		fn(server, uri)
	}
}

// SetLogLevel asks every server that declares logging to send log messages of level and above
// (logging/setLevel), now and after each reconnect. The gateway's clients each still get only
// the levels they asked for.
func (m *Manager) SetLogLevel(ctx context.Context, level string) {
	if !knownLevel(mcp.LoggingLevel(level)) {
		return
	}
	m.hookMu.Lock()
	m.logLevel = level
	m.hookMu.Unlock()
	for _, s := range m.servers {
		s.mu.Lock()
		sess := s.sess
		s.mu.Unlock()
		if sess != nil {
			s.applyLogLevel(ctx, sess)
		}
	}
}

func (s *server) applyLogLevel(ctx context.Context, sess *session) {
	s.m.hookMu.Lock()
	level := s.m.logLevel
	s.m.hookMu.Unlock()
	ir := sess.cs.InitializeResult()
	if level == "" || ir == nil || ir.Capabilities == nil || ir.Capabilities.Logging == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout())
	defer cancel()
	if err := sess.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: mcp.LoggingLevel(level)}); err != nil {
		s.log.Debug("MCP server logging/setLevel failed", "err", s.red.scrub(err))
	}
}

// startFeatures runs once a session is up: lists prompts and resources, applies the log level
// and subscriptions, and watches for list changes.
func (s *server) startFeatures(ctx context.Context, sess *session) {
	s.applyLogLevel(ctx, sess)
	s.fetchFeatures(ctx, sess)
	s.resubscribe(ctx, sess)
	s.m.wg.Add(1)
	go s.watchFeatures(sess)
}

// leveled is a downstream client whose requests carry their own log level (a sessionless
// client: its _meta's io.modelcontextprotocol/logLevel).
type leveled interface{ LogLevel() string }

// stampLogLevel puts a log level into a request's _meta for a server on the sessionless
// protocol (2026-07-28), where the level travels with each request instead of
// logging/setLevel: the level of the client the call is for when its request named one, else
// the one the gateway's session clients asked for.
func (s *server) stampLogLevel(ctx context.Context, sess *session, meta *mcp.Meta) {
	s.m.hookMu.Lock()
	level := s.m.logLevel
	s.m.hookMu.Unlock()
	if c, ok := relay.From(ctx).(leveled); ok && knownLevel(mcp.LoggingLevel(c.LogLevel())) {
		level = c.LogLevel()
	}
	ir := sess.cs.InitializeResult()
	if level == "" || ir == nil || ir.ProtocolVersion < "2026-07-28" {
		return
	}
	if *meta == nil {
		*meta = mcp.Meta{}
	}
	(*meta)[mcp.MetaKeyLogLevel] = level
}
