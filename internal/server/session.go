package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Session lifecycle (W7). Each MCP session is the scope of its suspended runs. When it ends —
// DELETE, stdio EOF, a transport error, or the idle timeout of an HTTP session — its running
// execs and waits are cancelled and its suspended runs dropped at once, so a client that goes
// away frees its share of the run store for the others.
//
// Sessions are registered on their first request (a receiving middleware sees every one), and
// one goroutine per session waits for its end. The SDK's session end waits for in-flight calls
// to return, so the end is also detected earlier: a stdio transport's read failing (EOF), or an
// HTTP DELETE, ends the session at once, cancelling what runs.

type session struct {
	key string
	// principal is who opened the session ("" nobody): a request of another principal on the
	// same session id is refused (mcpEndpoint), so a session id is no bearer credential.
	principal string
	// client is who the session counts against for serve.http.maxSessionsPerClient.
	client string
	ctx    context.Context // cancelled when the session ends
	cancel context.CancelFunc
	// inUse counts the session's HTTP requests in progress and lastUsed is when one last began
	// or ended (both under sessions.mu): makeRoom closes only a session nobody is using.
	inUse    int
	lastUsed time.Time
}

type sessions struct {
	mu     sync.Mutex
	byPtr  map[*mcp.ServerSession]*session
	byKey  map[string]*mcp.ServerSession
	next   int64
	closed bool
	wg     sync.WaitGroup
}

func newSessions() *sessions {
	return &sessions{byPtr: map[*mcp.ServerSession]*session{}, byKey: map[string]*mcp.ServerSession{}}
}

// count is the number of live sessions.
func (ss *sessions) count() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.byPtr)
}

// use marks the session with this key in use until the returned function is called (a no-op
// for a session not registered).
func (ss *sessions) use(key string) func() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	st := ss.byPtr[ss.byKey[key]]
	if st == nil {
		return func() {}
	}
	st.inUse++
	st.lastUsed = time.Now()
	return func() {
		ss.mu.Lock()
		st.inUse--
		st.lastUsed = time.Now()
		ss.mu.Unlock()
	}
}

// counted reports whether a session counts against serve.http.maxSessions: live, initialized and
// addressable (Mcp-Session-Id); requests without a session make short-lived ones that do not.
func counted(ms *mcp.ServerSession) bool { return ms.ID() != "" && ms.InitializeParams() != nil }

// makeRoom decides whether client may open one more HTTP session, closing another to make room
// when the bounds are reached, and returns why not ("" when it may). Sessions are a shared
// resource that clients abandon (a client that opens one per call, or dies without DELETE), so
// a full table is not a reason to lock a newcomer out for the idle timeout: a client at its own
// share (perClient, 0 for none) gives up its least recently used idle session; when all maxSessions
// are open, the client holding the most gives up one — only if it holds more than the newcomer
// would, so sessions tend to an equal share. A session in use is never closed.
func (s *Server) makeRoom(client string, maxSessions, perClient int) string {
	if maxSessions <= 0 {
		return ""
	}
	if perClient <= 0 || perClient > maxSessions {
		perClient = maxSessions
	}
	ss := s.sess
	ss.mu.Lock()
	held := map[string]int{}
	total := 0
	for ms, st := range ss.byPtr {
		if counted(ms) {
			held[st.client]++
			total++
		}
	}
	var from, refusal string
	switch {
	case held[client] >= perClient:
		from = client
		refusal = "this client has serve.http.maxSessionsPerClient = " + itoa(int64(perClient)) + " MCP sessions open, all in use; close one (DELETE) or retry later"
	case total >= maxSessions:
		for c, n := range held {
			if n > held[client]+1 && (from == "" || n > held[from] || n == held[from] && c < from) {
				from = c
			}
		}
		refusal = "too many MCP sessions are open (serve.http.maxSessions = " + itoa(int64(maxSessions)) + ") and none can be closed for this one; retry later"
	default:
		ss.mu.Unlock()
		return ""
	}
	var victim *mcp.ServerSession
	var vst *session
	for ms, st := range ss.byPtr {
		if from == "" || st.client != from || st.inUse > 0 || !counted(ms) {
			continue
		}
		if vst == nil || st.lastUsed.Before(vst.lastUsed) {
			victim, vst = ms, st
		}
	}
	ss.mu.Unlock()
	if vst == nil {
		return refusal
	}
	s.log.Info("MCP session closed to make room for a new one", "session", vst.key, "principal", vst.principal,
		"idleFor", time.Since(vst.lastUsed).Round(time.Second).String(), "forSameClient", from == client)
	s.endSession(victim, vst)
	go func() { _ = victim.Close() }() // the SDK forgets it; nothing of it is in flight
	return ""
}

// session returns the session's state, registering it (and starting its watcher) on first sight
// with the identity of that first request. It returns nil for a session that ended, or after
// shutdown.
func (s *Server) session(ms *mcp.ServerSession, id identity) *session {
	ss := s.sess
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if st, ok := ss.byPtr[ms]; ok {
		return st
	}
	if ss.closed {
		return nil
	}
	key := "mcp:" + ms.ID()
	if ms.ID() == "" {
		ss.next++
		key = fmt.Sprintf("mcp:session-%d", ss.next)
	}
	st := &session{key: key, principal: id.principal, client: id.client, lastUsed: time.Now()}
	st.ctx, st.cancel = context.WithCancel(context.Background())
	ss.byPtr[ms] = st
	ss.byKey[key] = ms
	s.metrics.sessions.Inc()
	ss.wg.Add(1)
	go func() {
		defer ss.wg.Done()
		_ = ms.Wait()
		s.endSession(ms, st)
	}()
	return st
}

// endSession cancels the session's in-flight calls and drops its suspended runs, once.
func (s *Server) endSession(ms *mcp.ServerSession, st *session) {
	ss := s.sess
	ss.mu.Lock()
	if ss.byPtr[ms] != st {
		ss.mu.Unlock()
		return
	}
	delete(ss.byPtr, ms)
	delete(ss.byKey, st.key)
	ss.mu.Unlock()
	st.cancel()
	n := s.g.RT.EndSession(st.key)
	s.metrics.sessions.Dec()
	s.log.Debug("MCP session ended", "session", st.key, "principal", st.principal, "droppedRuns", n)
}

// endSessionByKey ends the session with this key now (an HTTP DELETE: the SDK's own close waits
// for in-flight calls, which must be cancelled first).
func (s *Server) endSessionByKey(key string) {
	s.sess.mu.Lock()
	ms := s.sess.byKey[key]
	st := s.sess.byPtr[ms]
	s.sess.mu.Unlock()
	if st != nil {
		s.endSession(ms, st)
	}
}

// known reports whether the session is registered (Run registers stdio sessions before their
// first request).
func (ss *sessions) known(ms *mcp.ServerSession) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	_, ok := ss.byPtr[ms]
	return ok
}

// lookup returns a registered session's state, nil for one never registered or ended.
func (ss *sessions) lookup(ms *mcp.ServerSession) *session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.byPtr[ms]
}

// sessionPrincipal is the principal of a live HTTP session, and whether it is known.
func (s *Server) sessionPrincipal(id string) (string, bool) {
	s.sess.mu.Lock()
	defer s.sess.mu.Unlock()
	ms, ok := s.sess.byKey["mcp:"+id]
	if !ok {
		return "", false
	}
	return s.sess.byPtr[ms].principal, true
}

// closeSessions ends every session (shutdown) and waits for the watchers.
func (s *Server) closeSessions() {
	ss := s.sess
	ss.mu.Lock()
	ss.closed = true
	live := make([]*mcp.ServerSession, 0, len(ss.byPtr))
	for ms := range ss.byPtr {
		live = append(live, ms)
	}
	ss.mu.Unlock()
	for _, ms := range live {
		_ = ms.Close()
	}
	ss.wg.Wait()
}
