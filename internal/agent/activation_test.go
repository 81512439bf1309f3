package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/provider/scripted"
)

// issue 22 item 9: with activation "auto", a model that prefers code mode gets exec and wait, any
// other model its tools directly, and the loop runs either.
func TestActivationPerModel(t *testing.T) {
	rt := newRuntime(t, func(o *codemode.Options) {
		o.CodeMode.Auto = true
		o.CodeMode.PreferredModels = []string{"coder-*"}
	})
	weather := &api.Tool{Name: "weather", Description: "The weather.", InputSchema: []byte(`{"type":"object","properties":{}}`),
		Execute: func(ctx context.Context, c *api.Call) (*api.Result, error) { return api.TextResult("sunny", nil) }}
	for _, c := range []struct{ model, tools, call string }{
		{"coder-large", "exec,wait", `{"code":"return await tools.weather({})"}`},
		{"small-chat", "weather", `{}`},
	} {
		t.Run(c.model, func(t *testing.T) {
			s := rt.Activate(api.RunContext{SessionKey: c.model, Model: c.model}, []*api.Tool{weather})
			name := strings.Split(c.tools, ",")[0]
			srv := scripted.New(t,
				func(r *scripted.Request) scripted.Reply {
					if got := strings.Join(r.ToolNames(), ","); got != c.tools {
						t.Errorf("%s sees %s, want %s", c.model, got, c.tools)
					}
					return scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: name, Arguments: c.call}}}
				},
				func(r *scripted.Request) scripted.Reply {
					if res := r.LastResults(); len(res) != 1 || !strings.Contains(res[0].Content, "sunny") {
						t.Errorf("result %+v", res)
					}
					return scripted.Reply{Text: "sunny"}
				})
			res, err := Run(context.Background(), s, Options{Client: client(t, srv, scripted.OpenAI, false, s), Model: c.model}, "weather?")
			if err != nil || res.Answer != "sunny" {
				t.Fatalf("%v %+v", err, res)
			}
		})
	}
}
