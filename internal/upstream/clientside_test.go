package upstream

//lint:file-ignore SA1019 logging and sampling are deprecated by SEP-2577, still forwarded

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"github.com/codemode-go/codemode/internal/relay"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type fakeClient struct {
	id   string
	mu   sync.Mutex
	logs []string
}

func (c *fakeClient) ID() string { return c.id }
func (c *fakeClient) Log(_ context.Context, p *mcp.LoggingMessageParams) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, _ := json.Marshal(p.Data)
	c.logs = append(c.logs, string(p.Level)+" "+string(b))
	return nil
}
func (c *fakeClient) Elicit(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return &mcp.ElicitResult{Action: "decline"}, nil
}
func (c *fakeClient) CreateMessage(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	return nil, errors.New("no")
}

// Unattributed traffic goes to the one client with calls in flight, never to a guess (issue 21
// item 2).
func TestSoleClient(t *testing.T) {
	s := &server{}
	a, b := &fakeClient{id: "a"}, &fakeClient{id: "b"}
	if _, err := s.soleClient(); !errors.Is(err, errNoClient) {
		t.Fatalf("no call in flight: %v", err)
	}
	doneA1 := s.track(relay.With(context.Background(), a))
	doneA2 := s.track(relay.With(context.Background(), &fakeClient{id: "a"})) // another call of the same client
	if c, err := s.soleClient(); err != nil || c.ID() != "a" {
		t.Fatalf("one client: %v %v", c, err)
	}
	doneB := s.track(relay.With(context.Background(), b))
	if _, err := s.soleClient(); !errors.Is(err, errAmbiguous) {
		t.Fatalf("two clients: %v", err)
	}
	doneA1()
	doneA2()
	if c, err := s.soleClient(); err != nil || c.ID() != "b" {
		t.Fatalf("b left alone: %v %v", c, err)
	}
	doneB()
	if done := s.track(context.Background()); done == nil {
		t.Fatal("a call without a client must still return a func")
	}
}

// The wire form of a server's request is paired with its decoded form; identical requests of
// different clients keep their bytes but lose their attribution.
func TestTakeAsk(t *testing.T) {
	s := &server{}
	a, b := &fakeClient{id: "a"}, &fakeClient{id: "b"}
	raw := json.RawMessage(`{"message":"Name?","requestedSchema":{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"string"}}}}`)
	s.tapRequest(relay.With(context.Background(), a), "elicitation/create", raw)
	var p mcp.ElicitParams
	_ = json.Unmarshal(raw, &p)
	got, src := s.takeAsk("elicitation/create", &p)
	if string(got) != string(raw) || src == nil || src().ID() != "a" {
		t.Fatalf("takeAsk = %s %v", got, src)
	}
	if got, _ := s.takeAsk("elicitation/create", &p); got != nil {
		t.Fatal("a request is taken once")
	}
	s.tapRequest(relay.With(context.Background(), a), "elicitation/create", raw)
	s.tapRequest(relay.With(context.Background(), b), "elicitation/create", raw)
	if got, src := s.takeAsk("elicitation/create", &p); string(got) != string(raw) || src != nil {
		t.Fatalf("identical requests of two clients: %s %v", got, src)
	}
	for range maxPendingAsks + 5 {
		s.tapRequest(context.Background(), "elicitation/create", raw)
	}
	if n := len(s.cside.asks); n > maxPendingAsks {
		t.Fatalf("%d stashed requests, bound %d", n, maxPendingAsks)
	}
	s.tapRequest(context.Background(), "elicitation/create", json.RawMessage(`{"message":`)) // garbage is ignored
	s.tapRequest(context.Background(), "roots/list", json.RawMessage(`{}`))
}

// A log message is forwarded with its data byte for byte, to the right client only.
func TestDeliverLog(t *testing.T) {
	s := &server{log: slog.New(slog.DiscardHandler)}
	a := &fakeClient{id: "a"}
	s.deliverLog(relay.With(context.Background(), a), json.RawMessage(`{"level":"info","logger":"x","data":{"z":1,"a":[2]}}`))
	s.deliverLog(relay.With(context.Background(), a), json.RawMessage(`{"level":"shout","data":"bad level"}`))
	s.deliverLog(context.Background(), json.RawMessage(`{"level":"info","data":"nobody in flight"}`))
	if len(a.logs) != 1 || a.logs[0] != `info {"z":1,"a":[2]}` {
		t.Fatalf("logs: %q", a.logs)
	}
}
