package server

import (
	"context"
	"net/http"
	"strings"
	"time"

	codemode "github.com/codemode-go/codemode"
	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/gateway"
	"github.com/codemode-go/codemode/internal/runstore"
	"github.com/codemode-go/codemode/internal/upstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the Prometheus metrics of one Server, in a registry of its own (tests run many
// servers in one process; the default registry would collide).
type metrics struct {
	reg      *prometheus.Registry
	calls    *prometheus.CounterVec   // exec/wait by status and code
	duration *prometheus.HistogramVec // exec/wait duration by call
	nested   *prometheus.CounterVec   // nested and direct tool calls by source and outcome
	agents   *prometheus.CounterVec   // child agents (agents.run) by outcome
	sessions prometheus.Gauge
}

// Sources of the numbers read at scrape time (nil-safe: tests may leave them unset).
type metricSources struct {
	suspendedRuns  func() int
	suspendedBytes func() int
	upstreams      func() []upstream.ServerStatus
	admission      func() (running, queued int, rejected uint64)
	store          storeSource
}

// storeSource is the shared run store's side of the metrics (zero without one).
type storeSource struct {
	stats     func() codemode.RunStoreStats
	usage     func(context.Context) (runstore.Usage, error) // fleet-wide records and bytes
	collector prometheus.Collector                          // the store's own (latency, errors)
}

// storeSources reads the gateway's shared run store, if it has one.
func storeSources(g *gateway.Gateway) storeSource {
	st := g.RunStore()
	if st == nil {
		return storeSource{}
	}
	src := storeSource{stats: func() codemode.RunStoreStats { return g.RT.Stats().RunStore }, usage: st.Usage}
	if c, ok := st.(prometheus.Collector); ok {
		src.collector = c
	}
	return src
}

func newMetrics(src metricSources) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "codemode_calls_total",
		Help: "exec and wait calls by result status and error code (code is empty unless status is failed), and principal (a serve.principals name, default or anonymous).",
	}, []string{"call", "status", "code", "principal"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "codemode_call_duration_seconds",
		Help:    "Duration of exec and wait calls, queueing for a slot included.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"call"})
	m.nested = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "codemode_tool_calls_total",
		Help: "Tool calls made by cells (nested) and by clients (direct), by tool source and outcome (ok or error).",
	}, []string{"kind", "source", "outcome"})
	m.agents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "codemode_agents_total",
		Help: "Child agents started by cells with agents.run (tools.swarm), by outcome: completed, failed, cancelled, timeout, invalid (no valid structured result) or refused (never started).",
	}, []string{"outcome"})
	m.sessions = prometheus.NewGauge(prometheus.GaugeOpts{Name: "codemode_mcp_sessions", Help: "MCP client sessions open."})
	m.reg.MustRegister(m.calls, m.duration, m.nested, m.agents, m.sessions,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&scrapeCollector{src: src})
	if c := src.store.collector; c != nil {
		m.reg.MustRegister(c)
	}
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{MaxRequestsInFlight: 4, Timeout: 10 * time.Second})
}

func (m *metrics) observe(call, principal string, res api.ExecResult, d time.Duration) {
	code := ""
	if res.Status == api.StatusFailed {
		code = string(res.Code)
		if code == "" {
			code = "error" // a guest exception or hook refusal: no Z code
		}
	}
	m.calls.WithLabelValues(call, res.Status, code, principal).Inc()
	m.duration.WithLabelValues(call).Observe(d.Seconds())
}

// Record implements api.Trajectory: nested calls are counted by source and outcome, child
// agents by outcome.
func (m *metrics) Record(ev api.TrajectoryEvent) {
	switch ev.Kind {
	case api.EventNested:
		m.toolCall("nested", ev.Tool, ev.Status != "ok")
	case api.EventAgent:
		m.agents.WithLabelValues(ev.Status).Inc()
	}
}

func (m *metrics) toolCall(kind, toolID string, isError bool) {
	src, _, _ := strings.Cut(toolID, ":")
	switch api.Source(src) {
	case api.SourceNative, api.SourceMCP, api.SourceClient:
	default:
		src = "unknown"
	}
	outcome := "ok"
	if isError {
		outcome = "error"
	}
	m.nested.WithLabelValues(kind, src, outcome).Inc()
}

var (
	descSuspendedRuns  = prometheus.NewDesc("codemode_suspended_runs", "Suspended runs waiting for `wait` whose current state this process holds (with a shared run store, codemode_runstore_runs counts the fleet's).", nil, nil)
	descSuspendedBytes = prometheus.NewDesc("codemode_suspended_bytes", "Bytes of stored snapshots of suspended runs.", nil, nil)
	descRunning        = prometheus.NewDesc("codemode_running_vms", "Execs and waits holding an admission slot (running a VM).", nil, nil)
	descQueued         = prometheus.NewDesc("codemode_admission_queue_depth", "Execs and waits queued for a slot.", nil, nil)
	descRejected       = prometheus.NewDesc("codemode_admission_rejected_total", "Execs and waits refused as overloaded.", nil, nil)
	descUpstream       = prometheus.NewDesc("codemode_upstream_state", "Upstream MCP server state (1 for the current state).", []string{"server", "state"}, nil)
	descUpTools        = prometheus.NewDesc("codemode_upstream_tools", "Tools offered by an upstream MCP server.", []string{"server"}, nil)
	descUpRestarts     = prometheus.NewDesc("codemode_upstream_restarts_total", "Reconnection attempts of an upstream MCP server.", []string{"server"}, nil)

	descStoreTakeovers = prometheus.NewDesc("codemode_runstore_takeovers_total", "Waits that resumed a run from a gateway replica that stopped (its wait died midway, or its calls had no live owner).", nil, nil)
	descStoreReissued  = prometheus.NewDesc("codemode_runstore_reissued_calls_total", "Replay-safe nested calls of a stopped replica issued again.", nil, nil)
	descStoreLost      = prometheus.NewDesc("codemode_runstore_lost_calls_total", "Nested calls of a stopped replica that settled as lost_on_replica.", nil, nil)
	descStoreBusy      = prometheus.NewDesc("codemode_runstore_busy_waits_total", "Waits answered busy: another wait held the run (lease contention, or a stopped replica's lease not run out yet).", nil, nil)
	descStoreWriteFail = prometheus.NewDesc("codemode_runstore_write_failures_total", "Writes to the run store that failed (unreachable, full, read-only).", nil, nil)
	descStoreRuns      = prometheus.NewDesc("codemode_runstore_runs", "Suspended runs in the shared run store, fleet-wide (what runtime.suspended.maxRuns bounds).", nil, nil)
	descStoreBytes     = prometheus.NewDesc("codemode_runstore_bytes", "Bytes of records and results in the shared run store, fleet-wide (what runtime.suspended.maxBytes bounds).", nil, nil)
	descStoreUp        = prometheus.NewDesc("codemode_runstore_up", "1 when the shared run store answered the last scrape's usage read, 0 when it did not.", nil, nil)
)

// scrapeCollector reads state owned elsewhere (run store, admission, upstreams) at scrape time.
type scrapeCollector struct{ src metricSources }

func (c *scrapeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSuspendedRuns, descSuspendedBytes, descRunning, descQueued, descRejected, descUpstream, descUpTools, descUpRestarts,
		descStoreTakeovers, descStoreReissued, descStoreLost, descStoreBusy, descStoreWriteFail, descStoreRuns, descStoreBytes, descStoreUp} {
		ch <- d
	}
}

func (c *scrapeCollector) Collect(ch chan<- prometheus.Metric) {
	if f := c.src.suspendedRuns; f != nil {
		ch <- prometheus.MustNewConstMetric(descSuspendedRuns, prometheus.GaugeValue, float64(f()))
	}
	if f := c.src.suspendedBytes; f != nil {
		ch <- prometheus.MustNewConstMetric(descSuspendedBytes, prometheus.GaugeValue, float64(f()))
	}
	if f := c.src.admission; f != nil {
		running, queued, rejected := f()
		ch <- prometheus.MustNewConstMetric(descRunning, prometheus.GaugeValue, float64(running))
		ch <- prometheus.MustNewConstMetric(descQueued, prometheus.GaugeValue, float64(queued))
		ch <- prometheus.MustNewConstMetric(descRejected, prometheus.CounterValue, float64(rejected))
	}
	if f := c.src.store.stats; f != nil {
		st := f()
		for _, x := range []struct {
			d *prometheus.Desc
			v uint64
		}{{descStoreTakeovers, st.Takeovers}, {descStoreReissued, st.ReissuedCalls}, {descStoreLost, st.LostCalls},
			{descStoreBusy, st.BusyWaits}, {descStoreWriteFail, st.WriteFailures}} {
			ch <- prometheus.MustNewConstMetric(x.d, prometheus.CounterValue, float64(x.v))
		}
	}
	if f := c.src.store.usage; f != nil {
		ctx, cancel := context.WithTimeout(context.Background(), storeProbeTimeout)
		u, err := f(ctx)
		cancel()
		up := 0.0
		if err == nil {
			up = 1
			ch <- prometheus.MustNewConstMetric(descStoreRuns, prometheus.GaugeValue, float64(u.Runs))
			ch <- prometheus.MustNewConstMetric(descStoreBytes, prometheus.GaugeValue, float64(u.Bytes))
		}
		ch <- prometheus.MustNewConstMetric(descStoreUp, prometheus.GaugeValue, up)
	}
	if f := c.src.upstreams; f != nil {
		for _, st := range f() {
			for _, s := range []upstream.State{upstream.StateConnecting, upstream.StateReady, upstream.StateFailed, upstream.StateStopped} {
				v := 0.0
				if st.State == s {
					v = 1
				}
				ch <- prometheus.MustNewConstMetric(descUpstream, prometheus.GaugeValue, v, st.Name, string(s))
			}
			ch <- prometheus.MustNewConstMetric(descUpTools, prometheus.GaugeValue, float64(st.Tools), st.Name)
			ch <- prometheus.MustNewConstMetric(descUpRestarts, prometheus.CounterValue, float64(st.Restarts), st.Name)
		}
	}
}
