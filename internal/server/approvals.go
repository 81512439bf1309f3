package server

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

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
// each rule's fallback (deny unless the rule says allow).

// maxApprovalRounds bounds the fallback loop of one tool call (a cell that keeps asking).
const maxApprovalRounds = 16

// stateKey signs request states: a client cannot point a retry at another run.
var stateKey = func() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}()

func signState(sessionKey, runID string) string {
	m := hmac.New(sha256.New, stateKey)
	m.Write([]byte(sessionKey + "\x00" + runID))
	return "v1." + runID + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func verifyState(sessionKey, state string) (string, error) {
	rest, ok := strings.CutPrefix(state, "v1.")
	i := strings.LastIndexByte(rest, '.')
	if !ok || i < 0 {
		return "", errors.New("malformed request state")
	}
	runID := rest[:i]
	if !hmac.Equal([]byte(signState(sessionKey, runID)), []byte(state)) {
		return "", errors.New("the request state was not issued to this session by this server")
	}
	return runID, nil
}

// canElicit reports whether the client declared elicitation (form mode).
func canElicit(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	return ip != nil && ip.Capabilities != nil && ip.Capabilities.Elicitation != nil &&
		(ip.Capabilities.Elicitation.Form != nil || ip.Capabilities.Elicitation.URL == nil)
}

// multiRoundTrip reports whether the client handles input requests itself (protocol 2026-07-28
// and later); older clients get them fulfilled by the SDK once per call.
func multiRoundTrip(ss *mcp.ServerSession) bool {
	ip := ss.InitializeParams()
	return ip != nil && ip.ProtocolVersion >= "2026-07-28"
}

// continueRun applies the client's answers to a run's pending approvals and continues it with a
// wait. It is the retry of an exec or wait whose result asked for input.
func (s *Server) continueRun(ctx context.Context, run *codemode.Surface, ss *mcp.ServerSession, callID, state string, answers mcp.InputResponseMap) api.ExecResult {
	runID, err := verifyState(run.RunContext().SessionKey, state)
	if err != nil {
		return api.ExecResult{Status: api.StatusFailed, Code: api.CodeInvalidInput, Error: "cannot continue the run: " + err.Error()}
	}
	who := "elicitation"
	if ip := ss.InitializeParams(); ip != nil && ip.ClientInfo != nil && ip.ClientInfo.Name != "" {
		who = "elicitation (" + clipName(ip.ClientInfo.Name) + ")"
	}
	for id, r := range answers {
		er, ok := r.(*mcp.ElicitResult)
		if !ok {
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
		if err := run.Decide(ctx, runID, id, dec); err != nil {
			s.log.Info("approval answer not applied", "run", runID, "call", id, "err", err)
		}
	}
	in, _ := json.Marshal(codemode.WaitInput{RunID: runID})
	return *run.Handle(ctx, callID, "wait", in).Exec
}

// settleApprovals handles a waiting(approval) result: with a client that can elicit it returns
// the input requests to send (and ok); without one it applies the fallbacks and waits again,
// returning the next result.
func (s *Server) settleApprovals(ctx context.Context, run *codemode.Surface, ss *mcp.ServerSession, callID string, res api.ExecResult, retry bool) (api.ExecResult, *mcp.CallToolResult) {
	for round := 0; res.Status == api.StatusWaiting && res.Reason == api.ReasonApproval && round < maxApprovalRounds; round++ {
		if canElicit(ss) {
			if retry && !multiRoundTrip(ss) {
				// The SDK fulfils input requests once per call for older clients: the next
				// round starts with the model's next wait.
				return res, nil
			}
			reqs := mcp.InputRequestMap{}
			for _, p := range res.PendingApprovals {
				reqs[p.CallID] = &mcp.ElicitParams{
					Mode:    "form",
					Message: approvalMessage(p),
					RequestedSchema: json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string",` +
						`"title":"Note","description":"Optional: why (kept in the audit log)"}}}`),
				}
			}
			return res, &mcp.CallToolResult{InputRequests: reqs, RequestState: signState(run.RunContext().SessionKey, res.RunID)}
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
		res = *run.Handle(ctx, fmt.Sprintf("%s/fallback-%d", callID, round+1), "wait", in).Exec
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
