// Package redisstore is the shared, durable run store on Redis: a fleet of gateways behind a
// load balancer resumes each other's suspended runs, and a restart loses none.
//
// Every operation is one Lua script (atomic on the server), every blob is sealed with
// AES-256-GCM bound to its run id and scope, and every call runs under a deadline: when Redis is
// down or stalls, callers get a *runstore.StoreError ("run store unavailable: …") in bounded
// time, never a hang or a panic. Client-side retries are off: the scripts are not idempotent
// (a retried Acquire would find its own lease), so a failed call is reported and the model's
// next wait retries it. A call that timed out may still have run on the server; the worst it
// leaves is a lease, which expires on its own.
//
// The Redis must not evict keys (maxmemory-policy noeviction, the default): an evicted lease
// would let two waits hold one run, and an evicted index would skew the limits. With the
// store full, Redis refuses writes and callers get a store error instead.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/runstore"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// DefaultPrefix starts every key the store writes.
const DefaultPrefix = "codemode:"

// DefaultTimeout bounds each call to Redis (connect, write, read).
const DefaultTimeout = 3 * time.Second

// Options configure a Store. The configuration maps runStore.redis.url to URL and the key read
// from the environment variable runStore.redis.keyEnv (KeyFromEnv) to Key.
type Options struct {
	// URL is redis://[user:password@]host:port/db, rediss:// for TLS, or unix://path.
	URL string
	// Key is the 32-byte master key; every replica sharing the store needs the same one.
	Key [32]byte
	// Prefix starts every key (default DefaultPrefix). Use a hash tag ("{codemode}:") on Redis
	// Cluster: each script touches several keys, which must share a slot.
	Prefix string
	// Limits bound the store, fleet-wide. Zero fields take runstore's defaults.
	Limits runstore.Limits
	// Timeout bounds each call (default DefaultTimeout), whatever the caller's context says.
	Timeout time.Duration
}

// Store is the Redis implementation of runstore.Durable.
type Store struct {
	rdb     *redis.Client
	keys    *keyring
	prefix  string
	lim     runstore.Limits
	timeout time.Duration
}

var _ runstore.Durable = (*Store)(nil)

// New makes a store. It does not connect: the first call does (Ping checks the connection at
// startup). Errors never echo the URL's password.
func New(opts Options) (*Store, error) {
	if opts.Key == ([32]byte{}) {
		return nil, errors.New("runStore.redis: the run store key is missing (set the environment variable named by keyEnv)")
	}
	o, err := redis.ParseURL(opts.URL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // *url.Error quotes the whole URL, password included
		}
		return nil, fmt.Errorf("runStore.redis.url: %v", err)
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = timeout, timeout, timeout, timeout
	o.ContextTimeoutEnabled = true
	o.MaxRetries = -1
	o.DialerRetries = 1
	o.DisableIdentity = true
	o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	keys, err := newKeyring(opts.Key)
	if err != nil {
		return nil, err
	}
	prefix := opts.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return &Store{rdb: redis.NewClient(o), keys: keys, prefix: prefix, lim: opts.Limits.WithDefaults(), timeout: timeout}, nil
}

// Ping checks that Redis answers.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return &runstore.StoreError{Err: err}
	}
	return nil
}

// Close closes the client's connections. The runs stay in Redis for the other replicas.
func (s *Store) Close() error { return s.rdb.Close() }

// run executes a script under the store's deadline and returns its reply: a status word and the
// script's values.
func (s *Store) run(ctx context.Context, sc *redis.Script, args ...any) ([]any, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	reply, err := sc.Run(ctx, s.rdb, nil, append([]any{s.prefix}, args...)...).Slice()
	if err != nil {
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
			err = fmt.Errorf("no answer within %v (%w)", s.timeout, err)
		}
		return nil, &runstore.StoreError{Err: err}
	}
	if len(reply) == 0 {
		return nil, &runstore.StoreError{Err: errors.New("empty script reply")}
	}
	status, _ := reply[0].(string)
	if err := verdict(status); err != nil {
		return nil, err
	}
	return reply[1:], nil
}

// verdict maps a script's status word to the store's errors.
func verdict(status string) error {
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
		return runstore.ErrBusy
	case "LEASELOST":
		return runstore.ErrLeaseLost
	case "TOOMANY":
		return runstore.ErrTooMany
	case "TOOMANYBYTES":
		return runstore.ErrTooManyBytes
	case "TOOMANYRESULTS":
		return runstore.ErrTooManyResults
	}
	return &runstore.StoreError{Err: fmt.Errorf("unexpected script reply %q", status)}
}

func ms(d time.Duration) int64 { return max(1, d.Milliseconds()) }

func (s *Store) limitArgs() []any {
	return []any{s.lim.Runs, s.lim.SessionRuns, s.lim.Bytes, s.lim.SessionBytes}
}

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
	args := append([]any{id, s.keys.keyID, d.sc, d.r, d.sess, sealed, ms(ttl)}, s.limitArgs()...)
	_, err := s.run(ctx, scriptPut, args...)
	return err
}

// Acquire implements runstore.Durable.
func (s *Store) Acquire(ctx context.Context, id string, scope api.RunContext, holder string, lease time.Duration) (runstore.Record, runstore.Lease, error) {
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
	reply, err := s.run(ctx, scriptAcquire, id, s.keys.keyID, d.sc, d.r, token, ms(lease))
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
	if len(reply) != 2 {
		return runstore.Record{}, &runstore.StoreError{Err: errors.New("malformed acquire reply")}
	}
	blob, _ := reply[0].(string)
	storedR, _ := reply[1].(string)
	stored := scopeDigests{sc: caller.sc, r: storedR, sess: caller.sess}
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
	return rec, nil
}

// releaseLease drops a lease if it is still ours (compare-and-delete), with nothing else.
func (s *Store) releaseLease(ctx context.Context, l runstore.Lease) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
	defer cancel()
	_ = scriptReleaseLease.Run(ctx, s.rdb, nil, s.prefix, l.RunID, l.Token).Err()
}

// Release implements runstore.Durable.
func (s *Store) Release(ctx context.Context, l runstore.Lease, rec *runstore.Record, delivered []string, ttl time.Duration) error {
	if err := runstore.CheckDuration("ttl", ttl); err != nil {
		return err
	}
	if err := runstore.CheckName(l.RunID); err != nil {
		return err
	}
	has, sealed := "0", []byte(nil)
	if rec != nil {
		if rec.Size() > s.lim.RecordBytes {
			return runstore.ErrRecordTooLarge
		}
		r := *rec
		r.Scope = l.Scope // a run never changes scope
		sealed = s.keys.seal(encodeRecord(r), s.keys.recordAAD(l.RunID, s.keys.scope(l.Scope)))
		has = "1"
	}
	args := append([]any{l.RunID, l.Token, ms(ttl), has, sealed}, s.limitArgs()...)
	seen := map[string]bool{}
	for _, c := range delivered {
		if !seen[c] && runstore.CheckName(c) == nil {
			seen[c] = true
			args = append(args, c)
		}
	}
	_, err := s.run(ctx, scriptRelease, args...)
	return err
}

// Delete implements runstore.Durable.
func (s *Store) Delete(ctx context.Context, l runstore.Lease) error {
	if err := runstore.CheckName(l.RunID); err != nil {
		return err
	}
	_, err := s.run(ctx, scriptDelete, l.RunID, l.Token)
	return err
}

// Cancel implements runstore.Durable.
func (s *Store) Cancel(ctx context.Context, id string) (bool, error) {
	if runstore.CheckName(id) != nil {
		return false, nil
	}
	reply, err := s.run(ctx, scriptCancel, id)
	if err != nil {
		return false, err
	}
	n, err := count(reply)
	return n == 1, err
}

// CancelSession implements runstore.Durable.
func (s *Store) CancelSession(ctx context.Context, sessionKey string) (int, error) {
	reply, err := s.run(ctx, scriptCancelSession, s.keys.digest("session", sessionKey))
	if err != nil {
		return 0, err
	}
	n, err := count(reply)
	return int(n), err
}

func count(reply []any) (int64, error) {
	if len(reply) < 1 {
		return 0, &runstore.StoreError{Err: errors.New("malformed script reply")}
	}
	n, ok := reply[0].(int64)
	if !ok {
		return 0, &runstore.StoreError{Err: errors.New("malformed script reply")}
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
	args := append([]any{id, s.keys.keyID, d.sc, d.r, callID, sealed, s.lim.Results}, s.limitArgs()...)
	_, err := s.run(ctx, scriptAddResult, args...)
	return err
}

// Results implements runstore.Durable.
func (s *Store) Results(ctx context.Context, l runstore.Lease) (map[string][]byte, error) {
	if err := runstore.CheckName(l.RunID); err != nil {
		return nil, err
	}
	reply, err := s.run(ctx, scriptResults, l.RunID, l.Token)
	if err != nil {
		return nil, err
	}
	if len(reply) != 1 {
		return nil, &runstore.StoreError{Err: errors.New("malformed results reply")}
	}
	flat, _ := reply[0].([]any)
	if len(flat)%2 != 0 {
		return nil, &runstore.StoreError{Err: errors.New("malformed results reply")}
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
	_, err := s.run(ctx, scriptHeartbeat, id, s.keys.ownerKey(id, owner), ms(ttl))
	return err
}

// OwnerAlive implements runstore.Durable.
func (s *Store) OwnerAlive(ctx context.Context, id, owner string) (bool, error) {
	if runstore.CheckName(id) != nil || runstore.CheckName(owner) != nil {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	n, err := s.rdb.Exists(ctx, s.prefix+"own:"+s.keys.ownerKey(id, owner)).Result()
	if err != nil {
		return false, &runstore.StoreError{Err: err}
	}
	return n == 1, nil
}

// Usage implements runstore.Durable.
func (s *Store) Usage(ctx context.Context) (runstore.Usage, error) {
	reply, err := s.run(ctx, scriptUsage)
	if err != nil {
		return runstore.Usage{}, err
	}
	if len(reply) != 2 {
		return runstore.Usage{}, &runstore.StoreError{Err: errors.New("malformed usage reply")}
	}
	runs, _ := reply[0].(int64)
	bytes, _ := reply[1].(int64)
	return runstore.Usage{Runs: int(runs), Bytes: bytes}, nil
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
