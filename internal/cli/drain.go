package cli

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/gateway"
	"github.com/codemode-go/codemode/internal/server"
)

// inFlight counts the HTTP requests being handled, but for GETs: an MCP client's GET is its
// standing event stream, which lasts as long as the session, while a POST carries a call and
// ends with it.
type inFlight struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n drops to 0 while someone waits
}

func (f *inFlight) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			h.ServeHTTP(w, r)
			return
		}
		f.mu.Lock()
		f.n++
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			f.n--
			if f.n == 0 && f.zero != nil {
				close(f.zero)
				f.zero = nil
			}
			f.mu.Unlock()
		}()
		h.ServeHTTP(w, r)
	})
}

// wait returns when no request is in flight, or ctx ends (reporting how many still run).
func (f *inFlight) wait(ctx context.Context) int {
	for {
		f.mu.Lock()
		if f.n == 0 {
			f.mu.Unlock()
			return 0
		}
		if f.zero == nil {
			f.zero = make(chan struct{})
		}
		ch := f.zero
		f.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.n
		}
	}
}

// drain is the graceful stop (SIGTERM, SIGINT; issue 20 item 6):
//  1. /readyz turns 503 ("draining") at once, so the balancer routes new work elsewhere;
//  2. the listener stops accepting and idle connections close;
//  3. running execs and waits finish or suspend — each ends within timeoutMs, and a suspension's
//     record is written before its answer goes out;
//  4. the clients' event streams are closed (they reconnect, through the balancer, elsewhere);
//  5. the nested calls this process still runs for suspended runs finish and their results are
//     stored, so no other replica has to count them lost.
//
// The grace for all of it is 2 × timeoutMs + 5 s (an exec and a wait); what still runs after it
// is cut, and another replica takes it over (replay-safe calls reissued, others lost_on_replica).
// An orchestrator's own grace (Kubernetes terminationGracePeriodSeconds) must be longer.
func drain(srv *server.Server, hs *http.Server, calls *inFlight, g *gateway.Gateway, cfg *config.Config, log *slog.Logger) {
	srv.Drain()
	grace := 2*cfg.Tools.CodeMode.Timeout() + 5*time.Second
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	log.Info("draining: finishing running execs and waits", "grace", grace)
	go func() { _ = hs.Shutdown(ctx) }() // stops accepting; returns when idle (streams never are)
	if n := calls.wait(ctx); n > 0 {
		log.Warn("draining: requests still running at the end of the grace period are cut", "requests", n)
	}
	_ = hs.Close() // the standing event streams
	if err := g.RT.Drain(ctx); err != nil {
		log.Warn("draining: nested calls of suspended runs cut", "err", err)
	}
	log.Info("drained", "took", time.Since(start).Round(time.Millisecond))
}
