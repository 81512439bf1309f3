package server

import (
	"testing"

	"github.com/codemode-go/codemode/api"
)

// TestMetricsCountAgents: child agents are counted by outcome from their trajectory events, and
// are not counted as tool calls (issue 25 item 5).
func TestMetricsCountAgents(t *testing.T) {
	m := newMetrics(metricSources{})
	for _, st := range []string{"completed", "completed", "failed", "refused"} {
		m.Record(api.TrajectoryEvent{Kind: api.EventAgent, Tool: "agents.run", Status: st})
	}
	m.Record(api.TrajectoryEvent{Kind: api.EventNested, Tool: "native:core:read", Status: "ok"})
	families, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	toolSeries := 0
	for _, f := range families {
		switch f.GetName() {
		case "codemode_agents_total":
			for _, mm := range f.GetMetric() {
				got[mm.GetLabel()[0].GetValue()] = mm.GetCounter().GetValue()
			}
		case "codemode_tool_calls_total":
			toolSeries = len(f.GetMetric())
		}
	}
	want := map[string]float64{"completed": 2, "failed": 1, "refused": 1}
	if len(got) != len(want) {
		t.Fatalf("codemode_agents_total = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("codemode_agents_total{outcome=%q} = %v, want %v", k, got[k], v)
		}
	}
	if toolSeries != 1 {
		t.Errorf("tool call series: %d, want 1 (agents are not tool calls)", toolSeries)
	}
}
