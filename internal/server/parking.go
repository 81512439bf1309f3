//lint:file-ignore SA1019 sampling is deprecated by SEP-2577 but still forwarded during its deprecation window (issue 21)

package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/progress"
	"github.com/codemode-go/codemode/internal/relay"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An upstream's question to a sessionless client (issue 21 item 2, its multi round-trip half).
//
// A 2026-07-28 client has no session, so the gateway cannot send it elicitation/create or
// sampling/createMessage; it asks through the tool result instead (SEP-2322): an input-required
// result lists the questions, and the client calls the tool again with the answers and the
// requestState. An upstream MCP server, though, asks in the middle of its own tools/call (or
// through its own input-required result, which the gateway's go-sdk client turns into a call of
// the same handler) and waits for the answer. So the call of a sessionless client that can answer
// is parked: it runs on a goroutine of its own, and the request waits for whichever comes first,
// the call's result (returned as usual) or a question (returned as input-required, with a
// requestState of kind "elicitation" naming the parking). The upstream's handler keeps waiting;
// the retry hands it the answer and waits again on the same call, which goes on as if the
// question had been answered over a session.
//
// The requestState is mrtr.go's: signed, bound to the request's scope (principal, session,
// conversation key) and to the parking, to the questions it answers (answers to other ids are
// ignored), expiring with the earliest of them (an upstream's question lasts at most its call
// timeout), one-shot. What it names lives in this process — the upstream's connection and its
// waiting handler do — so the retry must reach the same replica; on another one it fails, saying
// so.
//
// A parking follows a code-mode run across requests: when exec or wait returns waiting, the
// parking stays with that run (its client is the one the run's nested calls ask: the dispatcher
// keeps the client of the request that drove the run last), and the next wait of the same scope
// on the run takes it up, so a question a nested call asks between two requests reaches the next
// wait at once.
//
// Over stdio (and an HTTP upstream's standalone stream) the protocol does not say which call a
// question is for; the gateway gives it to the one client whose calls are in flight on that
// server (upstream/clientside.go). For sessionless clients that client is a scope (principal,
// session, conversation key), like a session for session clients: such a question goes to the
// scope's mailbox, which every request of the scope waiting on a parked call shows, and the first
// answer wins.
//
// Abandoned calls end as unparked ones would: a request that goes away while it waits (a dropped
// connection, notifications/cancelled) cancels its call; a call nobody comes back for within its
// requestState's lifetime (plus retryGrace) is cancelled; a parking that follows a run lives at
// most the snapshot TTL. Every parking is bounded: maxParkings in the process, maxParkingsPerScope
// per principal (idle ones are evicted first), maxAsksPerParking questions at once.

const (
	maxParkings         = 4096
	maxParkingsPerScope = 64
	maxAsksPerParking   = 16
)

// retryGrace is how long an input-required call waits for its retry after its state expired
// (the retry may be on its way). A variable for tests.
var retryGrace = 10 * time.Second

// errParkingEnded is what an upstream hears when the call that asked was abandoned.
var errParkingEnded = errors.New("the client's call ended before it answered")

// parkings is the process's table of parked calls.
type parkings struct {
	s        *Server
	mu       sync.Mutex
	byID     map[string]*parking
	byRun    map[string]*parking // scope + "\x00" + runId → the parking that follows that run
	perScope map[string]int
	boxes    map[string]*mailbox // by scope: questions the protocol did not tie to a call
	closed   bool
}

func newParkings(s *Server) *parkings {
	return &parkings{s: s, byID: map[string]*parking{}, byRun: map[string]*parking{}, perScope: map[string]int{}, boxes: map[string]*mailbox{}}
}

// parking is one sessionless client's call (or, between requests, its code-mode run) whose
// questions become input-required results.
type parking struct {
	ps     *parkings
	id     string
	scope  string
	client *parkClient

	mu     sync.Mutex
	caps   *mcp.ClientCapabilities // declared by the request attached last
	att    *attachment             // the request waiting on the call now (nil: none)
	work   *parkWork               // the call in flight (nil between requests)
	own    *mailbox                // the call's questions not answered yet
	shared *mailbox                // the scope's (see above)
	runKey string                  // its byRun key while it follows a run
	timer  *time.Timer
	ended  bool
	signal chan struct{} // a question arrived (capacity 1)
}

// attachment is the request waiting on a parking: its answers are sent on it, and the call's
// progress and log messages go to its stream.
type attachment struct {
	ctx   context.Context
	ss    *mcp.ServerSession
	sink  progress.Sink
	level string // the request's _meta log level ("" none)
}

type parkWork struct {
	done   chan struct{}
	res    codemode.CallResult
	cancel context.CancelFunc
}

// ask is a question an upstream asked, waiting for the client's answer.
type ask struct {
	req     mcp.InputRequest
	expires time.Time
	answer  chan answer // capacity 1: exactly one answer is sent, by whoever removed it from its mailbox
}

// mailbox holds questions not answered yet, by input request id. Its lock is taken last (never
// while another is taken under it).
type mailbox struct {
	mu     sync.Mutex
	tag    string // in its ids: "" for a call's own, "s" for a scope's
	asks   map[string]*ask
	seq    int
	closed bool
}

func newMailbox(tag string) *mailbox { return &mailbox{tag: tag, asks: map[string]*ask{}} }

func (b *mailbox) put(kind string, a *ask) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return "", errParkingEnded
	}
	if len(b.asks) >= maxAsksPerParking {
		return "", fmt.Errorf("%d questions already wait for this client's answers", maxAsksPerParking)
	}
	b.seq++
	id := fmt.Sprintf("%s-%s%d", kind, b.tag, b.seq)
	b.asks[id] = a
	return id, nil
}

// take removes a question to answer it (nil: answered, withdrawn or unknown).
func (b *mailbox) take(id string) *ask {
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.asks[id]
	delete(b.asks, id)
	return a
}

// withdraw takes back a question nobody answered; false when an answer is on its way.
func (b *mailbox) withdraw(id string, a *ask) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.asks[id] != a {
		return false
	}
	delete(b.asks, id)
	return true
}

// pending copies the questions that keep returns true for.
func (b *mailbox) pending(keep func(*ask) bool, into map[string]*ask) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, a := range b.asks {
		if keep(a) {
			into[id] = a
		}
	}
}

func (b *mailbox) empty() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.asks) == 0
}

// close fails every question and refuses new ones.
func (b *mailbox) close() {
	b.mu.Lock()
	asks := b.asks
	b.asks, b.closed = map[string]*ask{}, true
	b.mu.Unlock()
	for _, a := range asks {
		a.answer <- answer{err: errParkingEnded}
	}
}

type answer struct {
	res mcp.InputResponse
	err error
}

// canAsk reports whether a request's client answers input requests (multi round-trip) and
// declared something an upstream may ask for.
func canAsk(req *mcp.CallToolRequest) bool {
	if !multiRoundTrip(req) {
		return false
	}
	c := req.ClientCapabilities()
	return c != nil && (c.Elicitation != nil || c.Sampling != nil)
}

// forCall returns the parking of a sessionless request's call, attached to the request, or nil
// when the call is not parked (a session, a client that cannot answer, the bounds). A wait takes
// up the parking that follows its run when it is idle.
func (ps *parkings) forCall(ctx context.Context, req *mcp.CallToolRequest, st *session, scope, name string, args json.RawMessage) *parking {
	if st != nil || req.Session == nil || !canAsk(req) {
		return nil
	}
	runID := ""
	if name == "wait" {
		var w struct {
			RunID string `json:"runId"`
		}
		_ = json.Unmarshal(args, &w)
		runID = w.RunID
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed {
		return nil
	}
	if p := ps.byRun[scope+"\x00"+runID]; runID != "" && p != nil && p.tryAttach(ctx, req) {
		return p
	}
	if ps.perScope[scope] >= maxParkingsPerScope || len(ps.byID) >= maxParkings {
		if !ps.evictIdleLocked(scope) {
			return nil // its questions fail at once, as a client without the capability's would
		}
	}
	box := ps.boxes[scope]
	if box == nil {
		box = newMailbox("s")
		ps.boxes[scope] = box
	}
	// A random id: a state another replica signed (the same serve.http.requestStateKey) must
	// not name a call of this one.
	var rnd [12]byte
	_, _ = rand.Read(rnd[:])
	p := &parking{ps: ps, id: "p" + hex.EncodeToString(rnd[:]), scope: scope, own: newMailbox(""), shared: box,
		signal: make(chan struct{}, 1)}
	p.client = &parkClient{p: p}
	p.tryAttach(ctx, req)
	ps.byID[p.id] = p
	ps.perScope[scope]++
	return p
}

// evictIdleLocked ends an idle parking (no request, no call: one that follows a run) of scope,
// or of any scope when the process's table is full (ps.mu held).
func (ps *parkings) evictIdleLocked(scope string) bool {
	full := len(ps.byID) >= maxParkings
	for _, p := range ps.byID {
		if (p.scope == scope || full) && p.idle() {
			ps.removeLocked(p)
			go p.end()
			return true
		}
	}
	return false
}

func (ps *parkings) removeLocked(p *parking) {
	if ps.byID[p.id] != p {
		return
	}
	delete(ps.byID, p.id)
	if ps.perScope[p.scope]--; ps.perScope[p.scope] <= 0 {
		delete(ps.perScope, p.scope)
		if b := ps.boxes[p.scope]; b != nil && b.empty() {
			delete(ps.boxes, p.scope)
		}
	}
	p.mu.Lock()
	key := p.runKey
	p.mu.Unlock()
	if key != "" && ps.byRun[key] == p {
		delete(ps.byRun, key)
	}
}

func (ps *parkings) remove(p *parking) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.removeLocked(p)
}

// follow makes p the parking of a suspended run.
func (ps *parkings) follow(p *parking, runID string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.byID[p.id] != p {
		return
	}
	key := p.scope + "\x00" + runID
	if old := ps.byRun[key]; old != nil && old != p {
		ps.removeLocked(old)
		go old.end()
	}
	p.mu.Lock()
	if p.runKey != "" && p.runKey != key && ps.byRun[p.runKey] == p {
		delete(ps.byRun, p.runKey)
	}
	p.runKey = key
	p.mu.Unlock()
	ps.byRun[key] = p
}

// close ends every parking (shutdown).
func (ps *parkings) close() {
	ps.mu.Lock()
	ps.closed = true
	all := make([]*parking, 0, len(ps.byID))
	for _, p := range ps.byID {
		all = append(all, p)
	}
	ps.mu.Unlock()
	for _, p := range all {
		p.abandon()
	}
}

// idle reports a parking no request and no call use.
func (p *parking) idle() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.att == nil && p.work == nil && !p.ended
}

// tryAttach attaches req to an idle parking.
func (p *parking) tryAttach(ctx context.Context, req *mcp.CallToolRequest) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.att != nil || p.work != nil || p.ended {
		return false
	}
	p.attachLocked(ctx, req)
	return true
}

func (p *parking) attachLocked(ctx context.Context, req *mcp.CallToolRequest) {
	p.att = &attachment{ctx: ctx, ss: req.Session, sink: progress.From(ctx), level: requestLogLevel(req)}
	p.caps = req.ClientCapabilities()
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
}

// run starts the call f on its own goroutine and waits as await does. f gets a context that
// outlives the request, carrying the parking's client and progress.
func (p *parking) run(ctx context.Context, f func(context.Context) codemode.CallResult) (codemode.CallResult, *mcp.CallToolResult) {
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	wctx = relay.With(progress.With(wctx, p.progress), p.client)
	w := &parkWork{done: make(chan struct{}), cancel: cancel}
	p.mu.Lock()
	p.work = w
	p.mu.Unlock()
	go func() {
		res := f(wctx)
		p.mu.Lock()
		w.res = res
		close(w.done)
		p.mu.Unlock()
	}()
	return p.await(ctx)
}

// await waits, attached, for the call's result or a question. A question comes first: the
// result is input-required, and the call goes on without the request until the retry.
func (p *parking) await(ctx context.Context) (codemode.CallResult, *mcp.CallToolResult) {
	for {
		p.mu.Lock()
		if p.ended {
			p.mu.Unlock()
			return abandoned(), nil
		}
		if asks := p.pendingLocked(); len(asks) > 0 {
			ask, exp := p.inputRequired(asks)
			p.att = nil
			p.armLocked(time.Until(exp) + retryGrace)
			p.mu.Unlock()
			return codemode.CallResult{}, ask
		}
		w := p.work
		if w == nil {
			// Nothing runs and nothing asks (never expected: a request attaches to start a call
			// or to answer one): nothing to wait for.
			p.att = nil
			p.armLocked(retryGrace)
			p.mu.Unlock()
			return abandoned(), nil
		}
		if closed(w.done) {
			res := w.res
			p.work, p.att = nil, nil
			p.mu.Unlock()
			if ex := res.Exec; ex != nil && ex.RunID != "" && ex.Status == "waiting" {
				// The run is suspended: its nested calls may still ask, through this parking.
				p.ps.follow(p, ex.RunID)
				p.mu.Lock()
				p.armLocked(p.ps.s.g.RT.CodeMode().SnapshotTTL())
				p.mu.Unlock()
			} else {
				p.end()
			}
			return res, nil
		}
		p.mu.Unlock()
		select {
		case <-p.signal:
		case <-w.done:
		case <-ctx.Done():
			// The request went away (dropped connection, notifications/cancelled): its call
			// ends as an unparked one would.
			p.abandon()
			<-w.done
			return w.res, nil
		}
	}
}

// abandoned is the result of a call that ended while parked (its exec or wait, or direct call).
func abandoned() codemode.CallResult {
	ex := api.ExecResult{Status: api.StatusFailed, Code: api.CodeTimeout, Error: "the call ended while it waited for the client's answers: " + errParkingEnded.Error()}
	return codemode.CallResult{Exec: &ex, Err: errParkingEnded}
}

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// pendingLocked is every question the request attached now can answer: the call's own, and
// its scope's that the request declared the capability for (p.mu held).
func (p *parking) pendingLocked() map[string]*ask {
	out := map[string]*ask{}
	p.own.pending(func(*ask) bool { return true }, out)
	caps := p.caps
	p.shared.pending(func(a *ask) bool {
		if _, elicit := a.req.(*mcp.ElicitParams); elicit {
			return caps != nil && caps.Elicitation != nil
		}
		return caps != nil && caps.Sampling != nil
	}, out)
	return out
}

// inputRequired is the input-required result listing asks, and when its state expires.
func (p *parking) inputRequired(asks map[string]*ask) (*mcp.CallToolResult, time.Time) {
	reqs := mcp.InputRequestMap{}
	ids := make([]string, 0, len(asks))
	var exp time.Time
	for id, a := range asks {
		reqs[id] = a.req
		ids = append(ids, id)
		if exp.IsZero() || a.expires.Before(exp) {
			exp = a.expires
		}
	}
	slices.Sort(ids)
	state := p.ps.s.states.sign(roundTrip{Kind: kindElicitation, Scope: p.scope, Run: p.id, Inputs: ids, Exp: exp.Unix()})
	return &mcp.CallToolResult{InputRequests: reqs, RequestState: state}, exp
}

// armLocked ends the parking after d unless a request attaches first (p.mu held).
func (p *parking) armLocked(d time.Duration) {
	if p.timer != nil {
		p.timer.Stop()
	}
	p.timer = time.AfterFunc(d, func() {
		p.mu.Lock()
		idle := p.att == nil
		p.mu.Unlock()
		if idle {
			p.abandon()
		}
	})
}

// abandon cancels the call in flight and ends the parking.
func (p *parking) abandon() {
	p.mu.Lock()
	w := p.work
	p.mu.Unlock()
	if w != nil {
		w.cancel()
	}
	p.end()
}

// end removes the parking; the questions still waiting fail.
func (p *parking) end() {
	p.mu.Lock()
	if p.ended {
		p.mu.Unlock()
		return
	}
	p.ended = true
	if p.timer != nil {
		p.timer.Stop()
	}
	p.mu.Unlock()
	p.own.close() // the scope's questions stay for its other requests
	p.ps.remove(p)
}

// resume is the retry of an input-required result of kind elicitation: the answers go to the
// questions rt names, and the request waits on the call again.
func (ps *parkings) resume(ctx context.Context, req *mcp.CallToolRequest, rt *roundTrip) (codemode.CallResult, *mcp.CallToolResult, error) {
	ps.mu.Lock()
	p := ps.byID[rt.Run]
	ps.mu.Unlock()
	if p == nil || p.scope != rt.Scope {
		return codemode.CallResult{}, nil, errors.New("the call that asked is not waiting in this process: it ended (answered, cancelled, or abandoned when its requestState expired), or it runs on another replica (an upstream MCP server's question is answered on the replica that holds the upstream's connection)")
	}
	p.mu.Lock()
	if p.ended || p.att != nil {
		p.mu.Unlock()
		return codemode.CallResult{}, nil, errors.New("another request is already waiting on the call that asked")
	}
	p.attachLocked(ctx, req)
	var deliver []func()
	for id, r := range req.Params.InputResponses {
		if !rt.answers(id) {
			continue // not a question this state asked
		}
		a := p.own.take(id)
		if a == nil {
			a = p.shared.take(id)
		}
		if a == nil {
			continue // answered (another request of the scope) or expired meanwhile
		}
		ans := answerFor(a.req, r)
		deliver = append(deliver, func() { a.answer <- ans })
	}
	p.mu.Unlock()
	for _, d := range deliver {
		d()
	}
	// Questions the retry did not answer are asked again; a call whose questions all expired
	// meanwhile goes on without them (the upstream heard that nobody answered).
	res, ask := p.await(ctx)
	return res, ask, nil
}

// answerFor checks a client's answer against the question it answers.
func answerFor(q mcp.InputRequest, r mcp.InputResponse) answer {
	switch q.(type) {
	case *mcp.ElicitParams:
		er, ok := r.(*mcp.ElicitResult)
		if !ok || er == nil {
			return answer{err: fmt.Errorf("the client answered an elicitation with %s", describeAnswer(r))}
		}
		switch er.Action {
		case "accept", "decline", "cancel":
			return answer{res: er}
		}
		return answer{err: fmt.Errorf("the client answered an elicitation with action %q", clipName(er.Action))}
	case *mcp.CreateMessageParams:
		switch v := r.(type) {
		case *mcp.CreateMessageWithToolsResult:
			if v == nil || len(v.Content) != 1 {
				return answer{err: errors.New("the client answered a sampling request without exactly one content block")}
			}
			return answer{res: &mcp.CreateMessageResult{Meta: v.Meta, Content: v.Content[0], Model: v.Model, Role: v.Role, StopReason: v.StopReason}}
		case *mcp.CreateMessageResult:
			if v != nil {
				return answer{res: v}
			}
		}
		return answer{err: fmt.Errorf("the client answered a sampling request with %s", describeAnswer(r))}
	}
	return answer{err: errors.New("unknown question")}
}

func describeAnswer(r mcp.InputResponse) string {
	switch r.(type) {
	case nil:
		return "nothing"
	case *mcp.ElicitResult:
		return "an elicitation result"
	case *mcp.CreateMessageWithToolsResult, *mcp.CreateMessageResult:
		return "a sampling result"
	case *mcp.ListRootsResult:
		return "a roots list"
	}
	return "an unknown answer"
}

// ask parks a question in box until the client answers it, the asker gives up (its context: an
// upstream's question lasts at most its call timeout), the question expires (the snapshot TTL at
// most) or the call is abandoned (its own box closes).
func (p *parking) ask(ctx context.Context, box *mailbox, kind string, q mcp.InputRequest) (mcp.InputResponse, error) {
	exp := time.Now().Add(p.ps.s.g.RT.CodeMode().SnapshotTTL())
	if d, ok := ctx.Deadline(); ok && d.Before(exp) {
		exp = d
	}
	a := &ask{req: q, expires: exp, answer: make(chan answer, 1)}
	id, err := box.put(kind, a)
	if err != nil {
		return nil, err
	}
	if box == p.own {
		p.poke()
	} else {
		p.ps.pokeScope(p.scope)
	}
	t := time.NewTimer(time.Until(exp))
	defer t.Stop()
	select {
	case ans := <-a.answer:
		return ans.res, ans.err
	case <-ctx.Done():
		if box.withdraw(id, a) {
			p.ps.dropEmptyBox(p.scope, box)
			return nil, fmt.Errorf("nobody answered: %w", ctx.Err())
		}
	case <-t.C:
		if box.withdraw(id, a) {
			p.ps.dropEmptyBox(p.scope, box)
			return nil, errors.New("the client did not answer in time")
		}
	}
	ans := <-a.answer // answered just now
	return ans.res, ans.err
}

func (p *parking) poke() {
	select {
	case p.signal <- struct{}{}:
	default:
	}
}

// pokeScope wakes every request of scope waiting on a parked call (a question in its mailbox).
func (ps *parkings) pokeScope(scope string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.byID {
		if p.scope == scope {
			p.poke()
		}
	}
}

// dropEmptyBox forgets a scope's mailbox once it is empty and no parking of the scope is left.
func (ps *parkings) dropEmptyBox(scope string, box *mailbox) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.boxes[scope] == box && ps.perScope[scope] == 0 && box.empty() {
		delete(ps.boxes, scope)
	}
}

func (p *parking) current() *attachment {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.att
}

func (p *parking) capabilities() *mcp.ClientCapabilities {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.caps
}

// progress forwards the call's progress to the request waiting on it, under its token.
func (p *parking) progress(v, total float64, msg string) {
	if att := p.current(); att != nil && att.sink != nil {
		att.sink(v, total, msg)
	}
}

// parkClient is the relay client of a parked call: its questions become input-required results.
type parkClient struct{ p *parking }

// ID is the scope's: the gateway's one client for its requests, as a session is.
func (c *parkClient) ID() string { return "sessionless:" + c.p.scope }

// box is where a question goes: the call's own, or the scope's when the protocol did not say
// which call asked.
func (c *parkClient) box(ctx context.Context) *mailbox {
	if relay.IsUnattributed(ctx) {
		return c.p.shared
	}
	return c.p.own
}

// LogLevel is the level the request waiting on the call asked for.
func (c *parkClient) LogLevel() string {
	if att := c.p.current(); att != nil {
		return att.level
	}
	return ""
}

func (c *parkClient) Log(ctx context.Context, params *mcp.LoggingMessageParams) error {
	att := c.p.current()
	if att == nil {
		return errors.New("no request of the client is in flight")
	}
	return (&sessionRelay{ss: att.ss, req: att.ctx}).Log(ctx, params)
}

func (c *parkClient) Elicit(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	caps := c.p.capabilities()
	if caps == nil || caps.Elicitation == nil {
		return nil, errors.New("the client did not declare elicitation")
	}
	if params.Mode == "url" && caps.Elicitation.URL == nil {
		return nil, errors.New(`the client did not declare "url" elicitation`)
	}
	if params.Mode != "url" && caps.Elicitation.Form == nil && caps.Elicitation.URL != nil {
		return nil, errors.New(`the client did not declare "form" elicitation`)
	}
	r, err := c.p.ask(ctx, c.box(ctx), "elicit", params)
	if err != nil {
		return nil, err
	}
	er, ok := r.(*mcp.ElicitResult) // answerFor checked it
	if !ok {
		return nil, errParkingEnded
	}
	return er, nil
}

func (c *parkClient) CreateMessage(ctx context.Context, params *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	if caps := c.p.capabilities(); caps == nil || caps.Sampling == nil {
		return nil, errors.New("the client did not declare sampling")
	}
	r, err := c.p.ask(ctx, c.box(ctx), "sample", params)
	if err != nil {
		return nil, err
	}
	cr, ok := r.(*mcp.CreateMessageResult)
	if !ok {
		return nil, errParkingEnded
	}
	return cr, nil
}
