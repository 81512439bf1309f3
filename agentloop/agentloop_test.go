package agentloop

import (
	"context"
	"strings"
	"testing"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/provider/scripted"
)

// TestNew: the library's way to the built-in loop (issue 25 item 3) — a runtime with the swarm
// on and this runner starts children against the model.
func TestNew(t *testing.T) {
	srv := scripted.Start(t, scripted.Options{Repeat: func(r *scripted.Request) scripted.Reply {
		return scripted.Reply{Text: "hello from " + r.Model}
	}})
	runner, err := New(config.SwarmModel{Provider: "anthropic", BaseURL: srv.BaseURL("anthropic"), Model: "small"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sw := config.DefaultSwarm()
	sw.Enabled = true
	rt, err := codemode.New(context.Background(), codemode.Options{Swarm: &sw, Agents: runner})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	s := rt.Activate(api.RunContext{SessionKey: "s"}, nil)
	res := s.Exec(context.Background(), "e", codemode.ExecInput{Code: `return await agents.run("hi")`})
	if string(res.Value) != `"hello from small"` {
		t.Fatalf("%+v %s", res, res.Value)
	}
	if _, err := New(config.SwarmModel{Provider: "gemini", Model: "x"}, nil); err == nil || !strings.Contains(err.Error(), "gemini") {
		t.Fatalf("bad provider: %v", err)
	}
}

// TestDefault: linked, the built-in loop is the runner of a Swarm that names its model — no
// Options.Agents needed (issue 25 item 3).
func TestDefault(t *testing.T) {
	srv := scripted.Start(t, scripted.Options{Repeat: func(r *scripted.Request) scripted.Reply {
		return scripted.Reply{Text: "default runner, " + r.Model}
	}})
	sw := config.DefaultSwarm()
	sw.Enabled = true
	sw.Model = &config.SwarmModel{Provider: "openai", BaseURL: srv.BaseURL("openai"), Model: "m1"}
	rt, err := codemode.New(context.Background(), codemode.Options{Swarm: &sw})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res := rt.Activate(api.RunContext{SessionKey: "s"}, nil).Exec(context.Background(), "e", codemode.ExecInput{Code: `return await agents.run("hi")`})
	if string(res.Value) != `"default runner, m1"` {
		t.Fatalf("%+v %s", res, res.Value)
	}
}
