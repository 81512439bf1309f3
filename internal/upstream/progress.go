package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/progress"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Progress of upstream tool calls. A call asks the server for progress (a progressToken in its
// _meta) when someone listens: a progress.Sink in its context (the MCP server put it there for
// a client that asked for progress) or an api.Call.Update callback (a runtime streaming a nested
// call's updates). The server's notifications/progress are routed back by token. Tokens are ours
// (unique per server), so a server cannot address another call's listener.

// maxProgressMessage bounds a forwarded progress message.
const maxProgressMessage = 1024

// progressFor registers a listener for one call and returns its token and an unregister
// function; "" when nobody listens.
func (s *server) progressFor(ctx context.Context, call *api.Call) (string, func()) {
	sink := progress.From(ctx)
	var update func(api.ContentBlock)
	if call != nil {
		update = call.Update
	}
	if sink == nil && update == nil {
		return "", nil
	}
	s.progMu.Lock()
	if s.progress == nil {
		s.progress = map[string]func(*mcp.ProgressNotificationParams){}
	}
	s.progSeq++
	token := fmt.Sprintf("codemode-%s-%d", s.name, s.progSeq)
	s.progress[token] = func(p *mcp.ProgressNotificationParams) {
		msg := clip(p.Message, maxProgressMessage)
		if sink != nil {
			sink(p.Progress, p.Total, msg)
		}
		if update != nil {
			meta, _ := json.Marshal(map[string]float64{"progress": p.Progress, "total": p.Total})
			update(api.ContentBlock{Type: "text", Text: msg, Meta: meta})
		}
	}
	s.progMu.Unlock()
	return token, func() {
		// The SDK client hands notifications to their handler apart from responses, so the
		// last ones of a call can be delivered just after its result: keep routing them a
		// moment longer.
		time.AfterFunc(progressLinger, func() {
			s.progMu.Lock()
			delete(s.progress, token)
			s.progMu.Unlock()
		})
	}
}

// progressLinger is how long a finished call's progress token still routes notifications.
const progressLinger = 2 * time.Second

// deliverProgress hands a notification to the call that owns its token (others are dropped).
func (s *server) deliverProgress(p *mcp.ProgressNotificationParams) {
	if p == nil || math.IsNaN(p.Progress) || math.IsInf(p.Progress, 0) || math.IsNaN(p.Total) || math.IsInf(p.Total, 0) {
		return
	}
	token, ok := p.ProgressToken.(string)
	if !ok {
		return
	}
	s.progMu.Lock()
	f := s.progress[token]
	s.progMu.Unlock()
	if f != nil {
		f(p)
	}
}
