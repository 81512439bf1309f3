package codemode_test

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/agent"
	"github.com/codemode-go/codemode/internal/provider"
	"github.com/codemode-go/codemode/internal/provider/scripted"
)

// Issue 25 benchmarks. Per-child overhead without a model (target ≤ 2 ms): a runner that answers
// at once ("instant"), and one that runs one cell in the child's surface ("one exec") — launch,
// admission, FIFO, the child surface (policy, catalog, description), the child's VM, the result
// and the trajectory. Then 100 children through the built-in loop against a model that answers at
// once (HTTP, both wire formats): wall time and the process's peak RSS.
//
//	go test -run '^$' -bench 'Swarm' -benchtime 20x .

type funcRunner func(ctx context.Context, task *codemode.AgentTask) (string, error)

func (f funcRunner) RunAgent(ctx context.Context, task *codemode.AgentTask) (string, error) {
	return f(ctx, task)
}

func benchRuntime(b *testing.B, runner codemode.AgentRunner) *codemode.Surface {
	b.Helper()
	sw := config.DefaultSwarm()
	sw.Enabled = true
	sw.MaxChildrenPerGroup, sw.MaxTotalPerGroup = 100, 100
	cm := config.DefaultCodeMode()
	cm.TimeoutMs = 60000
	rt, err := codemode.New(context.Background(), codemode.Options{CodeMode: &cm, Swarm: &sw, Agents: runner})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	return rt.Activate(api.RunContext{SessionKey: "bench", RunID: "r"}, []*api.Tool{lookupTool()})
}

const fanOut100 = `return (await Promise.all(Array.from({length: 100}, (_, i) => agents.run("task " + i)))).length`

func runFanOut(b *testing.B, s *codemode.Surface, i int) {
	res := s.Exec(context.Background(), "e"+strconv.Itoa(i), codemode.ExecInput{Code: fanOut100})
	if res.Status != api.StatusCompleted || string(res.Value) != "100" {
		b.Fatalf("%+v %s", res, res.Value)
	}
}

func BenchmarkSwarmChildOverhead(b *testing.B) {
	for name, runner := range map[string]codemode.AgentRunner{
		"instant": funcRunner(func(context.Context, *codemode.AgentTask) (string, error) { return "ok", nil }),
		"one exec": funcRunner(func(ctx context.Context, task *codemode.AgentTask) (string, error) {
			r := task.Surface.Handle(ctx, "c1", "exec", json.RawMessage(`{"code":"return (await tools.lookup({q: 'x'})).hit"}`))
			if r.Exec == nil || r.Exec.Status != api.StatusCompleted {
				return "", os.ErrInvalid
			}
			return string(r.Exec.Value), nil
		}),
	} {
		b.Run(name, func(b *testing.B) {
			s := benchRuntime(b, runner)
			runFanOut(b, s, -1) // warm: the children's catalog template
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				runFanOut(b, s, i)
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N*100), "µs/child")
		})
	}
}

func BenchmarkSwarm100Children(b *testing.B) {
	for _, prov := range wireFormats {
		b.Run(prov, func(b *testing.B) {
			srv := scripted.Start(b, scripted.Options{NoRecord: true, Repeat: func(r *scripted.Request) scripted.Reply {
				return scripted.Reply{Text: "done " + r.Messages[0].Text}
			}})
			s := benchRuntime(b, &agent.Runner{Model: "m", Provider: provider.Options{Provider: prov, BaseURL: srv.BaseURL(prov), MaxRetries: -1}})
			runFanOut(b, s, -1)
			resetPeakRSS()
			base := procStatusMB("VmRSS:")
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				runFanOut(b, s, i)
			}
			b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/100-children")
			if mb := procStatusMB("VmHWM:"); mb > 0 {
				b.ReportMetric(mb, "peak-RSS-MB")
				b.ReportMetric(base, "RSS-before-MB")
			}
		})
	}
}

// resetPeakRSS resets the kernel's high-water mark of this process's RSS (Linux).
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// procStatusMB reads a memory line of /proc/self/status (VmHWM: the peak RSS since the last
// reset; VmRSS: now) in MB, 0 where unknown.
func procStatusMB(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
