// Package redisstore is the shared, durable run store on Redis: a fleet of gateways behind a
// load balancer resumes each other's suspended runs, and a restart loses none.
//
// It runs on a standalone Redis, on Sentinel-managed primaries and on Redis Cluster, through one
// client (client.go). Every operation is a Lua script (atomic on the server) whose keys are
// declared and share one hash slot (keys.go); every blob is sealed with AES-256-GCM bound to its
// run id and scope; every call runs under a deadline: when Redis is down or stalls, callers get a
// *runstore.StoreError ("run store unavailable: …") in bounded time, never a hang or a panic.
// Client-side retries are off: the scripts are not idempotent (a retried Acquire would find its
// own lease), so a failed call is reported and the model's next wait retries it. A call that
// timed out may still have run on the server; the worst it leaves is a lease, which expires on
// its own within one lease (runStore.redis.takeoverMs).
//
// The Redis must not evict keys (maxmemory-policy noeviction, the default): an evicted lease
// would let two waits hold one run, and an evicted index would skew the limits. With the store
// full, Redis refuses writes and callers get a store error of kind "full" instead.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/runstore"
	"github.com/redis/go-redis/v9"
)

// DefaultPrefix starts every key the store writes.
const DefaultPrefix = "codemode:"

// DefaultTimeout bounds each call to Redis (connect, write, read).
const DefaultTimeout = 3 * time.Second

// usageRefresh is how old the other shards' totals may be when a new run is admitted against
// the fleet-wide limits.
const usageRefresh = time.Second

// probeValue is what Ping writes: the size of a small record.
var probeValue = strings.Repeat("p", 64<<10)

// sealSlack is what sealing and the record envelope add to a record's bytes at most (scope JSON
// included): a stored value larger than RecordBytes plus this was not written by a store.
const sealSlack = 64<<10 + 256

// Store is the Redis implementation of runstore.Durable.
type Store struct {
	rdb     redis.UniversalClient
	keys    *keyring
	prefix  string
	lim     runstore.Limits
	timeout time.Duration
	mode    string
	lease   time.Duration // takeover: how long a silent holder's lease lasts
	met     *storeMetrics

	mu        sync.Mutex
	shards    [accountShards]shardUsage
	refreshed time.Time
	refusal   *refusal // the last write Redis refused for good (full, read-only); nil once one passes
}

type refusal struct {
	kind, msg string
}

// Refusing reports whether Redis refused the store's last write (or probe) for a reason that
// lasts — "full" (maxmemory under noeviction) or "readonly" — and with what message; "" once a
// write or a probe succeeds again. Exec checks it before running a cell (issue 20 item 4).
func (s *Store) Refusing() (kind, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refusal == nil {
		return "", ""
	}
	return s.refusal.kind, s.refusal.msg
}

// noteWrite records the outcome of a write for Refusing.
func (s *Store) noteWrite(err error) {
	kind := runstore.StoreErrorKind(err)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch kind {
	case "":
		s.refusal = nil
	case "full", "readonly":
		s.refusal = &refusal{kind, err.Error()}
	}
}

type shardUsage struct{ runs, bytes int64 }

var _ runstore.Durable = (*Store)(nil)

// Ping checks that Redis answers (every master, on a cluster) and accepts writes: a Redis that
// refuses them (out of memory under noeviction, a replica, a cluster without quorum) fails
// with a *runstore.StoreError whose Kind says which.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	start := time.Now()
	err := s.rdb.Ping(ctx).Err()
	if err == nil {
		// A write of a typical record's size, gone in a second: Redis at maxmemory still takes
		// a tiny write now and then but refuses records (it counts a command's own buffer).
		err = s.rdb.Set(ctx, s.prefix+"{probe}:w", probeValue, time.Second).Err()
	}
	if err != nil {
		err = s.storeError(err)
	}
	s.observe("ping", start, err)
	s.noteWrite(err)
	return err
}

// Close closes the client's connections. The runs stay in Redis for the other replicas.
func (s *Store) Close() error { return s.rdb.Close() }

// Takeover implements runstore.Durable: Options.Lease.
func (s *Store) Takeover() time.Duration { return s.lease }

// Mode is "standalone", "sentinel" or "cluster".
func (s *Store) Mode() string { return s.mode }

// storeError wraps a client error, classified for metrics and readiness.
func (s *Store) storeError(err error) error {
	var ne net.Error
	kind := "error"
	msg := err.Error()
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		kind = "unreachable"
		err = fmt.Errorf("no answer within %v (%w)", s.timeout, err)
	case errors.As(err, &ne), errors.Is(err, redis.ErrClosed), strings.Contains(msg, "connection refused"),
		strings.HasPrefix(msg, "CLUSTERDOWN"), strings.HasPrefix(msg, "LOADING"), strings.HasPrefix(msg, "MASTERDOWN"),
		strings.Contains(msg, "no such host"), strings.Contains(msg, "EOF"):
		kind = "unreachable"
	case strings.HasPrefix(msg, "OOM "):
		kind = "full"
		err = fmt.Errorf("%w (Redis is at maxmemory and refuses writes; finish or cancel runs, or give it more memory)", err)
	case strings.HasPrefix(msg, "READONLY"), strings.HasPrefix(msg, "NOREPLICAS"):
		kind = "readonly"
	}
	return &runstore.StoreError{Err: err, Kind: kind}
}

func (s *Store) observe(op string, start time.Time, err error) {
	s.met.observe(op, time.Since(start), runstore.StoreErrorKind(err))
}

// run executes a script under the store's deadline and returns its values after the status
// word, or the verdict the status word names.
func (s *Store) run(ctx context.Context, op string, sc *redis.Script, keys []string, args ...any) ([]any, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	start := time.Now()
	reply, err := sc.Run(ctx, s.rdb, keys, args...).Slice()
	if err != nil {
		err = s.storeError(err)
		s.observe(op, start, err)
		s.noteWrite(err)
		return nil, err
	}
	if writes[op] {
		s.noteWrite(nil)
	}
	if len(reply) == 0 {
		err = &runstore.StoreError{Err: errors.New("empty script reply"), Kind: "error"}
		s.observe(op, start, err)
		return nil, err
	}
	s.observe(op, start, nil)
	status, _ := reply[0].(string)
	if err := verdict(status, reply[1:]); err != nil {
		return nil, err
	}
	return reply[1:], nil
}

// writes are the operations that write (a success says Redis takes writes again).
var writes = map[string]bool{"put": true, "release": true, "addresult": true, "account": true, "heartbeat": true}

// verdict maps a script's status word to the store's errors.
func verdict(status string, rest []any) error {
	switch status {
	case "OK":
		return nil
	case "UNAVAILABLE":
		return runstore.ErrUnavailable
	case "CANCELLED":
		return runstore.ErrCancelled
	case "WRONGKEY":
		return runstore.ErrWrongKey
	case "WRONGSESSION":
		return runstore.ErrWrongSession
	case "WRONGRUN":
		return runstore.ErrWrongRun
	case "BUSY":
		var left int64
		if len(rest) > 0 {
			left, _ = rest[0].(int64)
		}
		return &runstore.BusyError{RetryAfter: max(time.Duration(left)*time.Millisecond, time.Millisecond)}
	case "LEASELOST":
		return runstore.ErrLeaseLost
	case "TOOMANY":
		return fleetFull{runstore.ErrTooMany}
	case "TOOMANYSESSION":
		return runstore.ErrTooManySession
	case "TOOMANYPRINCIPAL":
		return runstore.ErrTooManyPrincipal
	case "TOOMANYBYTES":
		if len(rest) > 0 && rest[0] == "fleet" {
			return fleetFull{runstore.ErrTooManyBytes}
		}
		return runstore.ErrTooManyBytes
	case "TOOMANYRESULTS":
		return runstore.ErrTooManyResults
	case "TOOLARGE":
		return runstore.ErrTampered // larger than anything a store writes: planted
	}
	return &runstore.StoreError{Err: fmt.Errorf("unexpected script reply %q", status), Kind: "error"}
}

func ms(d time.Duration) int64 { return max(1, d.Milliseconds()) }

// change is one accounting change of a run.
type change struct {
	id, prin, sess string
	owned          bool          // the run belongs to its principal, not a session (Limits.SessionShare)
	keep           time.Duration // how long the accounting lives: the run's ttl and a lease
	rec            int           // sealed record bytes, -1 unchanged
	callID         string        // a result added, "" none
	result         int
	delivered      []string
}

// others returns the fleet's usage outside shard, refreshing the shards' totals when they are
// older than usageRefresh.
func (s *Store) others(ctx context.Context, shard int) (runs, bytes int64) {
	s.mu.Lock()
	stale := time.Since(s.refreshed) > usageRefresh
	s.mu.Unlock()
	if stale {
		_, _ = s.refreshUsage(ctx) // on error, the last totals stand
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, u := range s.shards {
		if i != shard {
			runs += u.runs
			bytes += u.bytes
		}
	}
	return runs, bytes
}

// refreshUsage reads every shard's totals in one pipeline.
func (s *Store) refreshUsage(ctx context.Context) (runstore.Usage, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	start := time.Now()
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.Cmd, accountShards)
	for i := range accountShards {
		cmds[i] = scriptUsage.EvalSha(ctx, pipe, s.usageKeys(i))
	}
	_, err := pipe.Exec(ctx)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		// First use on this server: load it once, then read again.
		pipe = s.rdb.Pipeline()
		for i := range accountShards {
			cmds[i] = scriptUsage.Eval(ctx, pipe, s.usageKeys(i))
		}
		_, err = pipe.Exec(ctx)
	}
	if err != nil {
		err = s.storeError(err)
		s.observe("usage", start, err)
		return runstore.Usage{}, err
	}
	s.observe("usage", start, nil)
	var total runstore.Usage
	var got [accountShards]shardUsage
	for i, c := range cmds {
		v, err := c.Slice()
		if err != nil || len(v) != 3 {
			return runstore.Usage{}, &runstore.StoreError{Err: errors.New("malformed usage reply"), Kind: "error"}
		}
		runs, _ := v[1].(int64)
		bytes, _ := v[2].(int64)
		got[i] = shardUsage{runs, bytes}
		total.Runs += int(runs)
		total.Bytes += bytes
	}
	s.mu.Lock()
	s.shards, s.refreshed = got, time.Now()
	s.mu.Unlock()
	return total, nil
}

// account checks the limits for a change and applies it to the run's shard. It returns whether
// the shard saw the run for the first time and the record bytes it counted before.
func (s *Store) account(ctx context.Context, c change) (isNew bool, oldRec int64, err error) {
	shard := shardOf(c.prin)
	oRuns, oBytes := s.others(ctx, shard)
	keep := int64(-1)
	if c.keep >= 0 {
		keep = ms(c.keep)
	}
	sessRuns, sessBytes := s.lim.SessionShare(c.owned)
	args := []any{c.id, keep, c.rec, c.callID, c.result,
		s.lim.Runs, sessRuns, s.lim.PrincipalRuns, s.lim.Bytes, sessBytes, s.lim.PrincipalBytes, oRuns, oBytes}
	for _, d := range c.delivered {
		args = append(args, d)
	}
	keys := s.acctKeys(shard, c.prin, c.sess, c.id)
	reply, err := s.run(ctx, "account", scriptAccount, keys, args...)
	if errors.Is(err, errFleetFull) {
		// Refused on the other shards' cached totals: read them now before saying no, so a
		// refusal is never stale (an admission may be, by at most usageRefresh).
		if _, rerr := s.refreshUsage(ctx); rerr == nil {
			oRuns, oBytes = s.others(ctx, shard)
			args[11], args[12] = oRuns, oBytes
			reply, err = s.run(ctx, "account", scriptAccount, keys, args...)
		}
	}
	if err != nil {
		var fe fleetFull
		if errors.As(err, &fe) {
			err = fe.err
		}
		return false, 0, err
	}
	if len(reply) != 4 {
		return false, 0, &runstore.StoreError{Err: errors.New("malformed account reply"), Kind: "error"}
	}
	n, _ := reply[0].(int64)
	oldRec, _ = reply[1].(int64)
	runs, _ := reply[2].(int64)
	bytes, _ := reply[3].(int64)
	s.mu.Lock()
	s.shards[shard] = shardUsage{runs, bytes}
	s.mu.Unlock()
	return n == 1, oldRec, nil
}

// fleetFull is a refusal by the fleet-wide limits (as opposed to a session's or principal's
// share, which are exact): errors.Is(err, errFleetFull).
type fleetFull struct{ err error }

func (f fleetFull) Error() string        { return f.err.Error() }
func (f fleetFull) Is(target error) bool { return target == errFleetFull || errors.Is(f.err, target) }

var errFleetFull = errors.New("fleet-wide limit")

// forget drops a run's accounting (it was deleted, cancelled, or never stored).
func (s *Store) forget(ctx context.Context, id, prin, sess string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
	defer cancel()
	_, _ = s.run(ctx, "forget", scriptForget, s.acctKeys(shardOf(prin), prin, sess, id), id)
}

// undo reverses an accounting change whose write the run's slot refused.
func (s *Store) undo(ctx context.Context, c change, isNew bool, oldRec int64, err error) {
	if isNew || errors.Is(err, runstore.ErrUnavailable) || errors.Is(err, runstore.ErrCancelled) {
		s.forget(ctx, c.id, c.prin, c.sess)
		return
	}
	if runstore.IsStoreError(err) {
		return // the write may have happened: the next change or the expiry corrects it
	}
	ctx = context.WithoutCancel(ctx)
	u := change{id: c.id, prin: c.prin, sess: c.sess, owned: c.owned, keep: c.keep, rec: -1}
	if c.rec >= 0 {
		u.rec = int(oldRec)
	}
	if c.callID != "" {
		u.delivered = []string{c.callID}
	}
	_, _, _ = s.account(ctx, u)
}

// keep is how long a run's accounting lasts after a write: its ttl and one lease (a held run
// outlives its ttl by up to a lease).
func (s *Store) keep(ttl time.Duration) time.Duration { return ttl + s.lease }

// Put implements runstore.Durable.
func (s *Store) Put(ctx context.Context, id string, rec runstore.Record, ttl time.Duration) error {
	if err := runstore.CheckName(id); err != nil {
		return err
	}
	if err := runstore.CheckDuration("ttl", ttl); err != nil {
		return err
	}
	if rec.Size() > s.lim.RecordBytes {
		return runstore.ErrRecordTooLarge
	}
	d := s.keys.scope(rec.Scope)
	sealed := s.keys.seal(encodeRecord(rec), s.keys.recordAAD(id, d))
	c := change{id: id, prin: d.prin, sess: d.sess, owned: d.owned, keep: s.keep(ttl), rec: len(sealed)}
	isNew, oldRec, err := s.account(ctx, c)
	if err != nil {
		return err
	}
	scope := s.keys.seal(encodeScope(rec.Scope), s.keys.scopeAAD(id, d))
	_, err = s.run(ctx, "put", scriptPut, s.runKeys(id).list(), s.keys.keyID, d.sc, d.r, d.sess, d.prin, sealed, ms(ttl), rec.Version, scope)
	if err != nil {
		s.undo(ctx, c, isNew, oldRec, err)
	}
	return err
}

// Acquire implements runstore.Durable.
func (s *Store) Acquire(ctx context.Context, id string, scope api.RunContext, holder string, lease time.Duration, have string) (runstore.Record, runstore.Lease, error) {
	if err := runstore.CheckName(id); err != nil {
		return runstore.Record{}, runstore.Lease{}, err
	}
	if err := runstore.CheckName(holder); err != nil {
		return runstore.Record{}, runstore.Lease{}, err
	}
	if err := runstore.CheckDuration("lease", lease); err != nil {
		return runstore.Record{}, runstore.Lease{}, err
	}
	d := s.keys.scope(scope)
	token := runstore.NewToken() + " " + holder
	reply, err := s.run(ctx, "acquire", scriptAcquire, s.runKeys(id).list(), s.keys.keyID, d.sc, d.r, token, ms(lease), have, s.lim.RecordBytes+sealSlack)
	if err != nil {
		return runstore.Record{}, runstore.Lease{}, err
	}
	l := runstore.Lease{RunID: id, Holder: holder, Token: token}
	rec, err := s.openAcquired(id, d, reply)
	if err != nil {
		// The lease is ours and the record useless: let the next caller hear the same verdict.
		s.releaseLease(ctx, l)
		return runstore.Record{}, runstore.Lease{}, err
	}
	l.Scope = rec.Scope
	return rec, l, nil
}

// openAcquired opens the record an acquire script returned and checks it belongs where it was
// found. Any failure is ErrTampered: the lease check passed, so the record is not ours to trust.
func (s *Store) openAcquired(id string, caller scopeDigests, reply []any) (runstore.Record, error) {
	if len(reply) != 4 {
		return runstore.Record{}, &runstore.StoreError{Err: errors.New("malformed acquire reply"), Kind: "error"}
	}
	blob, _ := reply[0].(string)
	storedR, _ := reply[1].(string)
	version, _ := reply[2].(string)
	unchanged, _ := reply[3].(int64)
	stored := scopeDigests{sc: caller.sc, r: storedR, sess: caller.sess}
	if unchanged == 1 {
		// The caller holds this version: only the run's scope comes back, sealed on its own.
		plain, err := s.keys.open([]byte(blob), s.keys.scopeAAD(id, stored))
		if err != nil {
			return runstore.Record{}, runstore.ErrTampered
		}
		sc, err := decodeScope(plain)
		if err != nil {
			return runstore.Record{}, runstore.ErrTampered
		}
		if got := s.keys.scope(sc); got.sc != stored.sc || got.r != stored.r {
			return runstore.Record{}, runstore.ErrTampered
		}
		return runstore.Record{Scope: sc, Version: version, Unchanged: true}, nil
	}
	plain, err := s.keys.open([]byte(blob), s.keys.recordAAD(id, stored))
	if err != nil {
		return runstore.Record{}, runstore.ErrTampered
	}
	rec, err := decodeRecord(plain)
	if err != nil {
		return runstore.Record{}, runstore.ErrTampered
	}
	if got := s.keys.scope(rec.Scope); got.sc != stored.sc || got.r != stored.r {
		return runstore.Record{}, runstore.ErrTampered
	}
	rec.Version = version
	return rec, nil
}

// releaseLease drops a lease if it is still ours (compare-and-delete), with nothing else.
func (s *Store) releaseLease(ctx context.Context, l runstore.Lease) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
	defer cancel()
	_, _ = s.run(ctx, "releaselease", scriptReleaseLease, s.runKeys(l.RunID).list(), l.Token)
}

// Renew implements runstore.Durable.
func (s *Store) Renew(ctx context.Context, l runstore.Lease, lease time.Duration) error {
	if err := runstore.CheckName(l.RunID); err != nil {
		return err
	}
	if err := runstore.CheckDuration("lease", lease); err != nil {
		return err
	}
	_, err := s.run(ctx, "renew", scriptRenew, s.runKeys(l.RunID).list(), l.Token, ms(lease))
	return err
}

// Release implements runstore.Durable.
func (s *Store) Release(ctx context.Context, l runstore.Lease, rec *runstore.Record, delivered []string, ttl time.Duration) error {
	if err := runstore.CheckDuration("ttl", ttl); err != nil {
		return err
	}
	if err := runstore.CheckName(l.RunID); err != nil {
		return err
	}
	d := s.keys.scope(l.Scope)
	has, sealed, version := "0", []byte(nil), ""
	c := change{id: l.RunID, prin: d.prin, sess: d.sess, owned: d.owned, keep: s.keep(ttl), rec: -1}
	if rec != nil {
		if rec.Size() > s.lim.RecordBytes {
			return runstore.ErrRecordTooLarge
		}
		r := *rec
		r.Scope = l.Scope // a run never changes scope
		sealed = s.keys.seal(encodeRecord(r), s.keys.recordAAD(l.RunID, d))
		has, version, c.rec = "1", rec.Version, len(sealed)
	}
	seen := map[string]bool{}
	for _, cid := range delivered {
		if !seen[cid] && runstore.CheckName(cid) == nil {
			seen[cid] = true
			c.delivered = append(c.delivered, cid)
		}
	}
	isNew, oldRec, err := s.account(ctx, c)
	if err != nil {
		return err
	}
	args := []any{l.Token, ms(ttl), has, sealed, version}
	for _, cid := range c.delivered {
		args = append(args, cid)
	}
	if _, err = s.run(ctx, "release", scriptRelease, s.runKeys(l.RunID).list(), args...); err != nil {
		s.undo(ctx, c, isNew, oldRec, err)
	}
	return err
}

// Delete implements runstore.Durable.
func (s *Store) Delete(ctx context.Context, l runstore.Lease) error {
	if err := runstore.CheckName(l.RunID); err != nil {
		return err
	}
	_, err := s.run(ctx, "delete", scriptDelete, s.runKeys(l.RunID).list(), l.Token)
	if err == nil {
		d := s.keys.scope(l.Scope)
		s.forget(ctx, l.RunID, d.prin, d.sess)
	}
	return err
}

// Cancel implements runstore.Durable.
func (s *Store) Cancel(ctx context.Context, id string) (bool, error) {
	if runstore.CheckName(id) != nil {
		return false, nil
	}
	reply, err := s.run(ctx, "cancel", scriptCancel, s.runKeys(id).list(), id)
	if err != nil {
		return false, err
	}
	n, err := count(reply)
	if n == 1 && len(reply) == 3 {
		prin, _ := reply[1].(string)
		sess, _ := reply[2].(string)
		s.forget(ctx, id, prin, sess)
	}
	return n == 1, err
}

// CancelSession implements runstore.Durable. The session's index is in its principal's shard,
// which the session key alone does not name: every shard is asked, in one pipeline.
func (s *Store) CancelSession(ctx context.Context, sessionKey string) (int, error) {
	sd := s.keys.digest("session", sessionKey)
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	start := time.Now()
	cmds := make([]*redis.Cmd, accountShards)
	pipe := s.rdb.Pipeline()
	for i := range accountShards {
		cmds[i] = scriptSessRuns.Eval(ctx, pipe, []string{s.sessionKey(i, sd)})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		err = s.storeError(err)
		s.observe("cancelsession", start, err)
		return 0, err
	}
	s.observe("cancelsession", start, nil)
	n := 0
	for _, c := range cmds {
		v, err := c.Slice()
		if err != nil || len(v) != 2 {
			return n, &runstore.StoreError{Err: errors.New("malformed session reply"), Kind: "error"}
		}
		ids, _ := v[1].([]any)
		for _, x := range ids {
			id, _ := x.(string)
			if runstore.CheckName(id) != nil {
				continue
			}
			ok, err := s.Cancel(ctx, id)
			if err != nil {
				return n, err
			}
			if ok {
				n++
			}
		}
	}
	return n, nil
}

func count(reply []any) (int64, error) {
	if len(reply) < 1 {
		return 0, &runstore.StoreError{Err: errors.New("malformed script reply"), Kind: "error"}
	}
	n, ok := reply[0].(int64)
	if !ok {
		return 0, &runstore.StoreError{Err: errors.New("malformed script reply"), Kind: "error"}
	}
	return n, nil
}

// AddResult implements runstore.Durable.
func (s *Store) AddResult(ctx context.Context, id string, scope api.RunContext, callID string, result []byte) error {
	if err := runstore.CheckName(id); err != nil {
		return err
	}
	if err := runstore.CheckName(callID); err != nil {
		return err
	}
	if len(result) > s.lim.ResultBytes {
		return runstore.ErrResultTooLarge
	}
	d := s.keys.scope(scope)
	sealed := s.keys.seal(result, s.keys.resultAAD(id, callID, d))
	// An added result does not extend the run's life: keep -1 leaves the accounting's expiry.
	c := change{id: id, prin: d.prin, sess: d.sess, owned: d.owned, keep: -1, rec: -1, callID: callID, result: len(sealed)}
	isNew, oldRec, err := s.account(ctx, c)
	if err != nil {
		return err
	}
	_, err = s.run(ctx, "addresult", scriptAddResult, s.runKeys(id).list(), s.keys.keyID, d.sc, d.r, callID, sealed, s.lim.Results)
	if err != nil {
		s.undo(ctx, c, isNew, oldRec, err)
	}
	return err
}

// Results implements runstore.Durable.
func (s *Store) Results(ctx context.Context, l runstore.Lease) (map[string][]byte, error) {
	if err := runstore.CheckName(l.RunID); err != nil {
		return nil, err
	}
	each := s.lim.ResultBytes + sealSlack
	reply, err := s.run(ctx, "results", scriptResults, s.runKeys(l.RunID).list(), l.Token, each, int64(s.lim.Results)*int64(each))
	if err != nil {
		return nil, err
	}
	if len(reply) != 1 {
		return nil, &runstore.StoreError{Err: errors.New("malformed results reply"), Kind: "error"}
	}
	flat, _ := reply[0].([]any)
	if len(flat)%2 != 0 {
		return nil, &runstore.StoreError{Err: errors.New("malformed results reply"), Kind: "error"}
	}
	d := s.keys.scope(l.Scope)
	out := make(map[string][]byte, len(flat)/2)
	for i := 0; i < len(flat); i += 2 {
		callID, _ := flat[i].(string)
		blob, _ := flat[i+1].(string)
		plain, err := s.keys.open([]byte(blob), s.keys.resultAAD(l.RunID, callID, d))
		if err != nil {
			return nil, runstore.ErrTampered
		}
		if plain == nil {
			plain = []byte{}
		}
		out[callID] = plain
	}
	return out, nil
}

// Heartbeat implements runstore.Durable.
func (s *Store) Heartbeat(ctx context.Context, id, owner string, ttl time.Duration) error {
	if err := runstore.CheckName(id); err != nil {
		return err
	}
	if err := runstore.CheckName(owner); err != nil {
		return err
	}
	if err := runstore.CheckDuration("ttl", ttl); err != nil {
		return err
	}
	keys := s.runKeys(id).list(s.ownerKeyName(id, s.keys.ownerKey(id, owner)))
	_, err := s.run(ctx, "heartbeat", scriptHeartbeat, keys, ms(ttl))
	return err
}

// OwnerAlive implements runstore.Durable.
func (s *Store) OwnerAlive(ctx context.Context, id, owner string) (bool, error) {
	if runstore.CheckName(id) != nil || runstore.CheckName(owner) != nil {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	start := time.Now()
	n, err := s.rdb.Exists(ctx, s.ownerKeyName(id, s.keys.ownerKey(id, owner))).Result()
	if err != nil {
		err = s.storeError(err)
		s.observe("owneralive", start, err)
		return false, err
	}
	s.observe("owneralive", start, nil)
	return n == 1, nil
}

// Versions implements runstore.Versioner: the stored version of each run ("" when it is gone),
// in one pipeline (a cluster client splits it by node).
func (s *Store) Versions(ctx context.Context, ids []string) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	start := time.Now()
	pipe := s.rdb.Pipeline()
	cmds := make(map[string]*redis.StringCmd, len(ids))
	for _, id := range ids {
		if runstore.CheckName(id) == nil {
			cmds[id] = pipe.HGet(ctx, s.runKeys(id)[0], "v")
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		err = s.storeError(err)
		s.observe("versions", start, err)
		return nil, err
	}
	s.observe("versions", start, nil)
	out := make(map[string]string, len(cmds))
	for id, c := range cmds {
		v, _ := c.Result()
		out[id] = v
	}
	return out, nil
}

// Usage implements runstore.Durable: the sum of every shard's totals, read now.
func (s *Store) Usage(ctx context.Context) (runstore.Usage, error) {
	return s.refreshUsage(ctx)
}

// slogLogger routes go-redis's own log lines (a dial failure per attempt while Redis is down)
// to a structured logger at debug level: the store already reports an unreachable Redis once,
// and every exec and wait that needs it says so.
type slogLogger struct{ log *slog.Logger }

func (l slogLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}

// RouteClientLogs sends the Redis client's process-wide log to log (debug level) instead of
// stderr. It is global to the process: the binary calls it, a library leaves it to its embedder.
func RouteClientLogs(log *slog.Logger) { redis.SetLogger(slogLogger{log}) }
