package server

import (
	"context"
	"net/http"
	"time"

	"github.com/codemode-go/codemode/internal/runstore"
	"github.com/codemode-go/codemode/internal/upstream"
)

// healthz is liveness: the process serves HTTP. It never looks at dependencies, so an upstream
// that is down does not get the gateway restarted by an orchestrator.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
}

// Readiness is what /readyz reports: ready when the sandbox runtime is usable (if code mode is
// on), the shared run store (if one is configured) answers and accepts writes, and every enabled
// upstream MCP server is connected.
type Readiness struct {
	Ready bool `json:"ready"`
	// Draining: the process got SIGTERM and finishes what runs before it exits; a balancer
	// sends it nothing new.
	Draining bool             `json:"draining,omitempty"`
	Runtime  string           `json:"runtime"` // "ok", "unavailable" or "disabled"
	Tools    int              `json:"tools"`   // model-visible tools
	RunStore *RunStoreReport  `json:"runStore,omitempty"`
	Servers  []UpstreamReport `json:"servers"`
}

// RunStoreReport is the shared run store in /readyz: State is "ok", or what is wrong —
// "unreachable" (no answer: down, partitioned, no primary), "full" (at maxmemory, refusing
// writes), "readonly" (a replica, or a primary being failed over) or "error".
type RunStoreReport struct {
	Mode      string `json:"mode,omitempty"` // standalone, sentinel or cluster
	State     string `json:"state"`
	LastError string `json:"lastError,omitempty"`
}

// storeProbeTimeout bounds the run store's part of a readiness check.
const storeProbeTimeout = 2 * time.Second

// runStoreReport probes the shared run store, if any: one PING and one tiny write.
func (s *Server) runStoreReport() *RunStoreReport {
	st := s.g.RunStore()
	if st == nil {
		return nil
	}
	r := &RunStoreReport{State: "ok"}
	if m, ok := st.(interface{ Mode() string }); ok {
		r.Mode = m.Mode()
	}
	p, ok := st.(interface{ Ping(context.Context) error })
	if !ok {
		return r // an in-process store is as ready as the process
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeProbeTimeout)
	defer cancel()
	if err := p.Ping(ctx); err != nil {
		r.State, r.LastError = runstore.StoreErrorKind(err), err.Error()
		if r.State == "" {
			r.State = "error"
		}
	}
	return r
}

// UpstreamReport is one upstream server in /readyz and in the start line.
type UpstreamReport struct {
	Name      string    `json:"name"`
	State     string    `json:"state"`
	Tools     int       `json:"tools"`
	Restarts  int       `json:"restarts,omitempty"`
	LastError string    `json:"lastError,omitempty"` // credentials in URLs redacted by internal/upstream
	Since     time.Time `json:"since"`
}

// Readiness reports the gateway's readiness.
func (s *Server) Readiness() Readiness {
	r := Readiness{Ready: true, Runtime: "disabled", Servers: []UpstreamReport{}}
	if s.draining.Load() {
		r.Ready, r.Draining = false, true
	}
	if s.g.Cfg.Tools.CodeMode.Enabled {
		r.Runtime = "ok"
		if s.g.RT.Err() != nil {
			r.Runtime, r.Ready = "unavailable", false
		}
	}
	if rs := s.runStoreReport(); rs != nil {
		r.RunStore = rs
		if rs.State != "ok" {
			r.Ready = false
		}
	}
	r.Tools = s.ToolCount()
	for _, st := range s.g.MCPStatus() {
		if st.Enabled && st.State != upstream.StateReady {
			r.Ready = false
		}
		r.Servers = append(r.Servers, UpstreamReport{Name: st.Name, State: string(st.State), Tools: st.Tools,
			Restarts: st.Restarts, LastError: st.LastError, Since: st.Since})
	}
	return r
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	r := s.Readiness()
	status := http.StatusOK
	if !r.Ready {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, r)
}

// Drain makes /readyz answer 503 with "draining": the first step of a graceful stop, so a
// balancer or Kubernetes stops routing here while running execs and waits finish.
func (s *Server) Drain() { s.draining.Store(true) }
