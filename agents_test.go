package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/swarm"
)

// runnerFunc adapts a function to AgentRunner.
type runnerFunc func(ctx context.Context, task *AgentTask) (string, error)

func (f runnerFunc) RunAgent(ctx context.Context, task *AgentTask) (string, error) {
	return f(ctx, task)
}

// TestChildResumeIsIdempotent: a child continued on another replica never runs twice — one
// that had ended is answered from its checkpoint without a runner, one that had not continues
// from the runner's state with the structured value it had submitted (issue 25 item 4).
func TestChildResumeIsIdempotent(t *testing.T) {
	var task *AgentTask
	runner := runnerFunc(func(ctx context.Context, tk *AgentTask) (string, error) {
		task = tk
		return "finished", nil
	})
	rt := newRuntime(t, testConfig(t), func(o *Options) {
		sw := config.DefaultSwarm()
		sw.Enabled = true
		o.Swarm, o.Agents = &sw, runner
	})
	s := rt.Activate(api.RunContext{SessionKey: "s", RunID: "r"}, nil)
	g := rt.swarm.NewGroup(swarm.GroupConfig{Run: s.run, ParentCallID: "e", Spawn: s.spawn, Durable: true})
	req := func(opts string) []byte { return []byte(`{"prompt":"p","options":` + opts + `}`) }

	ended, _ := json.Marshal(journal{V: 1, Outcome: &swarm.Outcome{Status: swarm.StatusCompleted, Text: "done before"}})
	g.Resume("e/1", ended)
	v, _, err := g.Run(context.Background(), "e/1", nil, req(`null`))
	if err != nil || string(v) != `"done before"` || task != nil {
		t.Fatalf("%s %v (runner called: %v)", v, err, task != nil)
	}

	midway, _ := json.Marshal(journal{V: 1, Runner: []byte("conversation so far"), Submitted: json.RawMessage(`{"n":7}`)})
	g.Resume("e/2", midway)
	v, _, err = g.Run(context.Background(), "e/2", nil, req(`{"schema":{"type":"object","properties":{"n":{"type":"integer"}}}}`))
	if err != nil || string(v) != `{"n":7}` || task == nil || string(task.Resume) != "conversation so far" || task.Checkpoint == nil {
		t.Fatalf("%s %v %+v", v, err, task)
	}
	if _, _, err := g.Run(context.Background(), "e/3", nil, req(`null`)); err != nil || string(task.Resume) != "" {
		t.Fatalf("a new child got a checkpoint: %v %q", err, task.Resume)
	}
	bad := []byte(`{"v":9}`)
	g.Resume("e/4", bad)
	if _, _, err := g.Run(context.Background(), "e/4", nil, req(`null`)); err == nil {
		t.Fatal("an unreadable checkpoint was run from scratch")
	}
}

// TestSwarmDescriptionGolden: with the swarm on, the exec description teaches agents.run in one
// paragraph and agents.d.ts states the limits in force; a child at the depth limit is taught
// nothing of it (issue 25 item 1).
func TestSwarmDescriptionGolden(t *testing.T) {
	rt := newRuntime(t, denyConfig(t), func(o *Options) {
		sw := config.DefaultSwarm()
		sw.Enabled = true
		o.Swarm, o.Agents = &sw, runnerFunc(func(context.Context, *AgentTask) (string, error) { return "", nil })
	})
	s := rt.Activate(api.RunContext{}, fixtureTools())
	dts, err := s.APIFile("agents.d.ts")
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]string{"exec-description-swarm.golden": s.Tools()[0].Description, "agents.d.ts.golden": dts} {
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update)", err)
		}
		if got != string(want) {
			t.Fatalf("%s changed (run with -update to accept):\n%s", name, got)
		}
	}
	plain, err := os.ReadFile(filepath.Join("testdata", "exec-description.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if d := s.Tools()[0].Description; strings.Replace(d, rt.swarm.Prompt(), "", 1) != string(plain) {
		t.Fatal("the swarm changed the description beyond its paragraph")
	}
	child := rt.activate(api.RunContext{RunID: "x"}, s.childTools(), &childInfo{depth: 1, runs: map[string]bool{}})
	if strings.Contains(child.Tools()[0].Description, "agents") {
		t.Fatal("a child at the depth limit is taught agents.run")
	}
	if _, err := child.APIFile("agents.d.ts"); err == nil {
		t.Fatal("a child at the depth limit has agents.d.ts")
	}
}

// TestNoAgentLoop: a Swarm that names its model, in a program that links no built-in runner and
// gives none, is refused with what to import.
func TestNoAgentLoop(t *testing.T) {
	old := swarm.BuiltinRunner
	swarm.BuiltinRunner = nil
	defer func() { swarm.BuiltinRunner = old }()
	sw := config.DefaultSwarm()
	sw.Enabled = true
	sw.Model = &config.SwarmModel{Provider: "openai", Model: "m"}
	if _, err := New(context.Background(), Options{Swarm: &sw}); !errors.Is(err, ErrNoAgentLoop) || !strings.Contains(err.Error(), "agentloop") {
		t.Fatalf("%v", err)
	}
}
