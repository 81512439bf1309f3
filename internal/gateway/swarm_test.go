package gateway

import (
	"strings"
	"testing"

	capi "github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/provider/scripted"
)

// TestSwarmInServe: `codemode serve` (the gateway) gives cells agents.run only when the
// configuration names the children's model, and then calls that model itself; without one the
// swarm stays off and the exec description says nothing of it (issue 25 item 3).
func TestSwarmInServe(t *testing.T) {
	g := open(t, nil, func(c *config.Config) { c.Tools.Swarm.Enabled = true })
	s := g.Surface(capi.RunContext{SessionKey: "s"}, nil)
	if strings.Contains(s.Tools()[0].Description, "agents") {
		t.Fatal("no model, yet the description teaches agents")
	}
	if v := value(t, run(t, s, `return typeof agents`)); v != `"undefined"` {
		t.Fatal(v)
	}

	for _, prov := range []string{scripted.OpenAI, scripted.Anthropic} {
		t.Run(prov, func(t *testing.T) {
			srv := scripted.Start(t, scripted.Options{APIKey: "sk-test", Repeat: func(r *scripted.Request) scripted.Reply {
				if r.Model != "child-model" {
					t.Errorf("model %q", r.Model)
				}
				return scripted.Reply{Text: "child of " + r.Messages[0].Text}
			}})
			t.Setenv("SWARM_TEST_KEY", "sk-test")
			g := open(t, nil, func(c *config.Config) {
				c.Tools.Swarm.Enabled = true
				c.Tools.Swarm.Model = &config.SwarmModel{Provider: prov, BaseURL: srv.BaseURL(prov), Model: "child-model",
					APIKey: config.Secret{Env: "SWARM_TEST_KEY"}, TimeoutMs: 10000}
			})
			s := g.Surface(capi.RunContext{SessionKey: "s"}, nil)
			if !strings.Contains(s.Tools()[0].Description, "agents.run(prompt") {
				t.Fatal("the description does not teach agents.run")
			}
			if v := value(t, run(t, s, `return await agents.run("gateway")`)); v != `"child of gateway"` {
				t.Fatal(v)
			}
		})
	}

	cfg := config.Default()
	cfg.Tools.Swarm.Enabled = true
	cfg.Tools.Swarm.Model = &config.SwarmModel{Provider: "openai", Model: "m", APIKey: config.Secret{Env: "SWARM_TEST_UNSET_KEY"}, TimeoutMs: 10000}
	if _, err := Open(t.Context(), cfg, Options{}); err == nil || !strings.Contains(err.Error(), "tools.swarm.model: apiKey") {
		t.Fatalf("a missing key: %v", err)
	}
}
