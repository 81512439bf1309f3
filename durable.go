package codemode

import (
	"context"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/dispatch"
	"github.com/codemode-go/codemode/internal/durable"
	"github.com/codemode-go/codemode/internal/sandbox"
)

// Suspended runs on a shared, durable store (Options.RunStore) live in internal/durable: the
// records, leases, heartbeats, takeovers and drain (RATIONALE.md, "Why is a suspended run
// resumable on any replica"). This file is the surface's side of that seam: what exec, wait and
// Decide call, and what the lifecycle asks of a surface (durableSurface).

// durableSurface is a Surface as internal/durable sees it.
type durableSurface struct{ s *Surface }

func (d durableSurface) Scope() api.RunContext { return d.s.run }

func (d durableSurface) Fingerprint() string { return d.s.cached.key }

func (d durableSurface) Limits(restartSafe bool) sandbox.Limits {
	lim := d.s.rt.limits()
	lim.RestartSafe = restartSafe
	d.s.admit(&lim)
	return lim
}

func (d durableSurface) Import(ctx context.Context, st sandbox.State, namespaces bool, check func(*dispatch.Dispatcher) error) (*sandbox.Run, *dispatch.Dispatcher, error) {
	s := d.s
	tmpl, err := s.template(ctx)
	if err != nil {
		return nil, nil, err
	}
	disp := s.dispatcher(st.Prefix, st.RestartSafe)
	s.attachSwarm(disp)
	if namespaces {
		s.buildNamespaces(ctx, disp)
	}
	if err := check(disp); err != nil {
		return nil, nil, err
	}
	lim := s.rt.limits()
	lim.RestartSafe = st.RestartSafe
	run, err := s.rt.engine.Import(tmpl, st, disp, lim)
	if err != nil {
		return nil, nil, err
	}
	return run, disp, nil
}

// storeRefuses fails an exec before it runs when the shared store refuses writes: a cell that
// suspended could not be saved (issue 20 item 4).
func (s *Surface) storeRefuses(ctx context.Context, start time.Time) (api.ExecResult, bool) {
	if msg := s.rt.durable.Refuses(ctx); msg != "" {
		return s.failed(start, api.CodeRunStore, msg), true
	}
	return api.ExecResult{}, false
}

// durablePrefix is the call-id prefix of a cell under a shared store.
func durablePrefix(callID string) string { return durable.Prefix(callID) }

// suspendNew stores the run an exec suspended (the first record of the run).
func (s *Surface) suspendNew(ctx context.Context, start time.Time, run *sandbox.Run, disp *dispatch.Dispatcher, out sandbox.Outcome, restartSafe bool, tr *api.TrajectoryEvent) api.ExecResult {
	tr.Delivered = out.Delivered
	res := s.rt.durable.Suspend(ctx, durableSurface{s}, run, disp, out, restartSafe)
	res.Telemetry = s.telemetry(start)
	return res
}

// waitDurable continues a run from the shared store (W1–W7 fleet-wide).
func (s *Surface) waitDurable(ctx context.Context, in WaitInput, start time.Time, tr *api.TrajectoryEvent) api.ExecResult {
	if s.rt.engine == nil {
		return s.failed(start, api.CodeRuntimeUnavailable, "code mode runtime unavailable: "+errString(s.rt.Err()))
	}
	res, delivered := s.rt.durable.Wait(ctx, durableSurface{s}, in.RunID, start)
	if delivered != nil {
		tr.Delivered = delivered
	}
	res.Telemetry = s.telemetry(start)
	return res
}

// decideDurable is Decide under a shared store: the decision is data in the store.
func (s *Surface) decideDurable(ctx context.Context, runID, callID string, dec api.Decision) error {
	return s.rt.durable.Decide(ctx, s.run, runID, callID, dec)
}
