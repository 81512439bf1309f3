package server

import (
	"net/http"
	"time"

	"github.com/codemode-go/codemode/internal/upstream"
)

// healthz is liveness: the process serves HTTP. It never looks at dependencies, so an upstream
// that is down does not get the gateway restarted by an orchestrator.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
}

// Readiness is what /readyz reports: ready when the sandbox runtime is usable (if code mode is
// on) and every enabled upstream MCP server is connected.
type Readiness struct {
	Ready   bool             `json:"ready"`
	Runtime string           `json:"runtime"` // "ok", "unavailable" or "disabled"
	Tools   int              `json:"tools"`   // model-visible tools
	Servers []UpstreamReport `json:"servers"`
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
	if s.g.Cfg.Tools.CodeMode.Enabled {
		r.Runtime = "ok"
		if s.g.RT.Err() != nil {
			r.Runtime, r.Ready = "unavailable", false
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
