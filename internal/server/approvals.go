package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/api"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Approvals through the MCP client (issue 11). A nested call that needs a person's decision
// parks (the runtime has no Approver in serve); when the cell cannot progress, exec or wait
// returns waiting with reason "approval". Instead of handing that to the model, the server asks
// the person through the client's elicitation, as MCP's multi round-trip requests (SEP-2322):
// the tool result carries one elicitation per pending call and a signed request state naming the
// run; the client shows the prompts and calls the tool again with the answers, and the server
// decides each call (accept approves, decline and cancel reject) and continues the run with a
// wait. For clients on protocol versions before multi round-trip, the MCP SDK itself sends the
// elicitations and calls the handler again with the answers. A client without elicitation gets
// each rule's fallback (deny unless the rule says allow). The request state is mrtr.go's.

// maxApprovalRounds bounds the fallback loop of one tool call (a cell that keeps asking).
const maxApprovalRounds = 16

// scopeKey is what a requestState is bound to: the run's principal, session and conversation.
func scopeKey(rc api.RunContext) string {
	return rc.Principal + "\x00" + rc.SessionKey + "\x00" + rc.SessionID
}

// canElicit reports whether the client declared elicitation (form mode), in its session's
// initialize or — stateless — in this request's _meta.
func canElicit(req *mcp.CallToolRequest) bool {
	c := req.ClientCapabilities()
	return c != nil && c.Elicitation != nil && (c.Elicitation.Form != nil || c.Elicitation.URL == nil)
}

// multiRoundTrip reports whether the client handles input requests itself (protocol 2026-07-28
// and later); older clients get them fulfilled by the SDK once per call.
func multiRoundTrip(req *mcp.CallToolRequest) bool { return req.ProtocolVersion() >= protocolStateless }

// retryCall is the retry of an exec or wait whose result asked for input: it opens the
// requestState and, by its kind, applies a person's approvals and continues the run with a wait,
// or hands an upstream's questions their answers and waits on the parked call (parking.go).
func (s *Server) retryCall(ctx context.Context, run *codemode.Surface, req *mcp.CallToolRequest, st *session, callID string) (api.ExecResult, *mcp.CallToolResult) {
	rt, err := s.states.open(req.Params.RequestState, scopeKey(run.RunContext()))
	if err != nil {
		return api.ExecResult{Status: api.StatusFailed, Code: api.CodeInvalidInput, Error: "cannot continue the run: " + err.Error()}, nil
	}
	switch rt.Kind {
	case kindApproval:
		if failed := s.applyApprovals(ctx, run, req, rt); failed != nil {
			return *failed, nil
		}
		in, _ := json.Marshal(codemode.WaitInput{RunID: rt.Run})
		res, ask := s.handle(ctx, req, st, run, callID, "wait", in)
		if ask != nil {
			return api.ExecResult{}, ask
		}
		return *res.Exec, nil
	case kindElicitation:
		res, ask, err := s.parks.resume(ctx, req, rt)
		switch {
		case err != nil:
			return api.ExecResult{Status: api.StatusFailed, Code: api.CodeInvalidInput, Error: "cannot continue the run: " + err.Error()}, nil
		case ask != nil:
			return api.ExecResult{}, ask
		case res.Exec == nil:
			return api.ExecResult{Status: api.StatusFailed, Code: api.CodeInvalidInput, Error: "cannot continue the run: the requestState names a direct tool call"}, nil
		}
		return *res.Exec, nil
	}
	return api.ExecResult{Status: api.StatusFailed, Code: api.CodeInvalidInput, Error: "cannot continue the run: unknown requestState kind " + quote(rt.Kind)}, nil
}

// applyApprovals applies the client's answers to a run's pending approvals; it returns the
// failure when the state changes nothing.
func (s *Server) applyApprovals(ctx context.Context, run *codemode.Surface, req *mcp.CallToolRequest, rt *roundTrip) *api.ExecResult {
	who := "elicitation"
	if ci := req.ClientInfo(); ci != nil && ci.Name != "" {
		who = "elicitation (" + clipName(ci.Name) + ")"
	}
	applied := 0
	for id, r := range req.Params.InputResponses {
		er, ok := r.(*mcp.ElicitResult)
		if !ok || !rt.answers(id) {
			continue
		}
		dec := api.Decision{Approve: er.Action == "accept", By: who}
		switch er.Action {
		case "decline":
			dec.Reason = "the person declined"
		case "cancel":
			dec.Reason = "the person dismissed the request"
		}
		if reason, ok := er.Content["reason"].(string); ok && reason != "" {
			dec.Reason = clipName(reason)
		}
		if err := run.Decide(ctx, rt.Run, id, dec); err != nil {
			s.log.Info("approval answer not applied", "run", rt.Run, "call", id, "err", err)
			continue
		}
		applied++
	}
	if applied == 0 && len(rt.Inputs) > 0 {
		// Every call it answers was decided before (a replay on another replica) or the
		// answers are missing: the state changes nothing.
		return &api.ExecResult{Status: api.StatusFailed, Code: api.CodeInvalidInput,
			Error: "cannot continue the run: the requestState's approvals were already decided, or the retry carries no answer to them; wait on the run instead"}
	}
	return nil
}

// settleApprovals handles a waiting(approval) result: with a client that can elicit it returns
// the input requests to send (and ok); without one it applies the fallbacks and waits again,
// returning the next result.
func (s *Server) settleApprovals(ctx context.Context, run *codemode.Surface, req *mcp.CallToolRequest, st *session, callID string, res api.ExecResult, retry bool) (api.ExecResult, *mcp.CallToolResult) {
	for round := 0; res.Status == api.StatusWaiting && res.Reason == api.ReasonApproval && round < maxApprovalRounds; round++ {
		if canElicit(req) {
			if retry && !multiRoundTrip(req) {
				// The SDK fulfils input requests once per call for older clients: the next
				// round starts with the model's next wait.
				return res, nil
			}
			reqs := mcp.InputRequestMap{}
			rt := roundTrip{Kind: kindApproval, Scope: scopeKey(run.RunContext()), Run: res.RunID,
				Exp: time.Now().Add(s.g.RT.CodeMode().SnapshotTTL()).Unix()}
			for _, p := range res.PendingApprovals {
				reqs[p.CallID] = &mcp.ElicitParams{
					Mode:    "form",
					Message: approvalMessage(p),
					RequestedSchema: json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string",` +
						`"title":"Note","description":"Optional: why (kept in the audit log)"}}}`),
				}
				rt.Inputs = append(rt.Inputs, p.CallID)
				if e := p.Expires.Unix(); !p.Expires.IsZero() && e < rt.Exp {
					rt.Exp = e
				}
			}
			return res, &mcp.CallToolResult{InputRequests: reqs, RequestState: s.states.sign(rt)}
		}
		// Nobody to ask: each call gets its rule's fallback.
		for _, p := range res.PendingApprovals {
			dec := api.Decision{By: "fallback (the client cannot elicit)", Reason: "no person can be asked to approve it"}
			if p.Fallback == api.FallbackAllow {
				dec = api.Decision{Approve: true, By: "fallback (the client cannot elicit)", Reason: "the policy allows it when nobody can be asked"}
			}
			_ = run.Decide(ctx, res.RunID, p.CallID, dec)
		}
		in, _ := json.Marshal(codemode.WaitInput{RunID: res.RunID})
		next, ask := s.handle(ctx, req, st, run, fmt.Sprintf("%s/fallback-%d", callID, round+1), "wait", in)
		if ask != nil {
			return res, ask // an upstream asks the client something else meanwhile
		}
		res = *next.Exec
	}
	return res, nil
}

func approvalMessage(p api.ApprovalRequest) string {
	in := string(p.Input)
	if len(in) > 600 {
		in = in[:600] + "…"
	}
	return fmt.Sprintf("%s\n\nTool: %s\nInput: %s\n\nAccept to run it, decline to refuse.", p.Prompt, p.Tool, in)
}

func clipName(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
