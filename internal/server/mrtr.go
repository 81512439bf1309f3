package server

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Multi round-trip request state (SEP-2322; issue 19 item 5). When a tool call needs the
// client's input — a person's approval (approvals.go), an upstream server's elicitation or
// sampling request (parking.go, issue 21) — the result carries input requests and a
// requestState; the client calls again with the answers and the state. The run itself stays on the server (a suspended run, in the shared run
// store for a fleet): the state only names it, and is
//
//   - signed (HMAC-SHA256 with serve.http.requestStateKey, shared by the replicas of a fleet, or
//     a key of this process);
//   - bound to the scope of the run (principal, or session, and conversation key) and to the
//     run: a state is useless to anybody else, and cannot be pointed at another run;
//   - bound to the input requests it answers: answers to other ids are ignored;
//   - expiring (when the earliest of its approval requests expires, at most the snapshot TTL);
//   - one-shot: a replay to this process is refused outright, and on any replica the answers
//     apply only to calls still pending, so a replay after the first answer changes nothing.
//
// kind says what the inputs are: "approval" (Run is the code-mode runId, the inputs its pending
// calls) or "elicitation" (Run names a parked call of this process, the inputs its upstreams'
// questions); both use the same envelope and checks.

// roundTrip is the signed content of a requestState.
type roundTrip struct {
	Kind   string   `json:"k"` // "approval" or "elicitation"
	Scope  string   `json:"s"` // scopeKey of the run's context
	Run    string   `json:"r"` // code-mode runId
	Inputs []string `json:"i"` // input request ids answered by the retry
	Exp    int64    `json:"e"` // unix seconds
	Nonce  string   `json:"n"`
}

const (
	kindApproval    = "approval"
	kindElicitation = "elicitation"
	stateVersion    = "v2."
)

type stateSigner struct {
	key []byte

	mu   sync.Mutex
	used map[string]int64 // nonce → expiry, for states already answered here
	now  func() time.Time
}

func newStateSigner(key []byte) *stateSigner {
	if len(key) == 0 {
		key = make([]byte, 32)
		_, _ = rand.Read(key)
	}
	return &stateSigner{key: key, used: map[string]int64{}, now: time.Now}
}

func (s *stateSigner) mac(payload string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("codemode requestState v2\x00"))
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// sign makes the requestState of rt (its nonce filled in).
func (s *stateSigner) sign(rt roundTrip) string {
	var n [12]byte
	_, _ = rand.Read(n[:])
	rt.Nonce = base64.RawURLEncoding.EncodeToString(n[:])
	b, _ := json.Marshal(rt)
	payload := base64.RawURLEncoding.EncodeToString(b)
	return stateVersion + payload + "." + s.mac(payload)
}

// errStateUsed is a requestState answered before.
var errStateUsed = errors.New("this requestState was already answered: wait on the run, or retry the call without it")

// open verifies a requestState for a caller in scope and consumes it.
func (s *stateSigner) open(state, scope string) (*roundTrip, error) {
	rest, ok := strings.CutPrefix(state, stateVersion)
	payload, sig, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 || len(state) > 8192 {
		return nil, errors.New("malformed requestState")
	}
	if !hmac.Equal([]byte(sig), []byte(s.mac(payload))) {
		return nil, errors.New("the requestState was not issued by this gateway (replicas need the same serve.http.requestStateKey)")
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	var rt roundTrip
	if err != nil || json.Unmarshal(b, &rt) != nil || rt.Run == "" || rt.Nonce == "" {
		return nil, errors.New("malformed requestState")
	}
	if !hmac.Equal([]byte(rt.Scope), []byte(scope)) {
		return nil, errors.New("the requestState was issued to another principal or session")
	}
	now := s.now()
	if now.Unix() > rt.Exp {
		return nil, fmt.Errorf("the requestState expired at %s", time.Unix(rt.Exp, 0).UTC().Format(time.RFC3339))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.used[rt.Nonce]; dup {
		return nil, errStateUsed
	}
	if len(s.used) > 4096 {
		for k, e := range s.used {
			if e < now.Unix() || len(s.used) > 8192 {
				delete(s.used, k)
			}
		}
	}
	s.used[rt.Nonce] = rt.Exp
	return &rt, nil
}

// answers reports whether rt names the input request id.
func (rt *roundTrip) answers(id string) bool { return slices.Contains(rt.Inputs, id) }
