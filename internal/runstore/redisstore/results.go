package redisstore

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/codemode-go/codemode/internal/results"
	"github.com/codemode-go/codemode/internal/runstore"
	"github.com/redis/go-redis/v9"
)

// The values cells save (results.save, oversized final values) in the same Redis as the runs,
// so they survive restarts and any replica loads what another saved (issue 22 item 1).
//
// Layout, made for Redis Cluster: every key of one owner (a principal, or a session when nobody
// authenticated) carries the owner's digest as its hash tag, so an owner's keys share one slot,
// and every script declares the keys it touches (KEYS); times come from the server's clock.
//
//	<prefix>saved:{O}:idx    hash: entry id -> "<scope digest> <bytes> <expiry ms>"
//	<prefix>saved:{O}:v:ID   the sealed value (SET PX: it expires with its entry)
//
// A value is sealed (AES-256-GCM) bound to its id and its scope's digest: moved to another id or
// scope, it does not open. The per-run and per-owner bounds are checked atomically in the save
// script; the store-wide bound is Redis's own memory limit (noeviction).

// ResultStore returns the store of saved values on this Redis, bounded by lim (zero fields:
// defaults). It shares the connection, the key and the timeouts of the run store.
func (s *Store) ResultStore(lim results.Limits) results.Store {
	return &savedStore{s: s, lim: lim.WithDefaults()}
}

type savedStore struct {
	s   *Store
	lim results.Limits
}

var _ results.Store = (*savedStore)(nil)

// maxOwnerEntries bounds the entries of one owner in Redis (all its runs).
const maxOwnerEntries = 1024

// savedVersion is the first byte of a saved value's plaintext.
const savedVersion = 1

var (
	scriptSavedPut = redis.NewScript(`
local idx, vkey = KEYS[1], KEYS[2]
local id, sc, size, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local maxRunN, maxRunB, maxOwnB, maxOwnN = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local all = redis.call('HGETALL', idx)
local runN, runB, ownN, ownB = 0, 0, 0, 0
for i = 1, #all, 2 do
  local esc, b, exp = string.match(all[i + 1], '^(%S+) (%d+) (%d+)$')
  if not esc or tonumber(exp) <= now then
    redis.call('HDEL', idx, all[i])
  else
    ownN = ownN + 1
    ownB = ownB + tonumber(b)
    if esc == sc then
      runN = runN + 1
      runB = runB + tonumber(b)
    end
  end
end
if runN >= maxRunN then return {'RUNCOUNT', tostring(runN)} end
if runB + size > maxRunB then return {'RUNBYTES', tostring(runB)} end
if ownB + size > maxOwnB or ownN >= maxOwnN then return {'OWNERBYTES', tostring(ownB)} end
redis.call('SET', vkey, ARGV[9], 'PX', ttl)
redis.call('HSET', idx, id, sc .. ' ' .. size .. ' ' .. (now + ttl))
redis.call('PEXPIRE', idx, ttl)
return {'OK'}
`)
	scriptSavedGet = redis.NewScript(`
local idx, vkey = KEYS[1], KEYS[2]
local id, sc, ttl, maxB = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local meta = redis.call('HGET', idx, id)
if not meta then return {'NOTFOUND'} end
local esc, b, exp = string.match(meta, '^(%S+) (%d+) (%d+)$')
if not esc or tonumber(exp) <= now then
  redis.call('HDEL', idx, id)
  return {'NOTFOUND'}
end
if esc ~= sc then return {'WRONGSCOPE'} end
local n = redis.call('STRLEN', vkey)
if n == 0 then
  redis.call('HDEL', idx, id)
  return {'NOTFOUND'}
end
if n > maxB then return {'TOOLARGE', tostring(n)} end
local v = redis.call('GET', vkey)
redis.call('PEXPIRE', vkey, ttl)
redis.call('HSET', idx, id, esc .. ' ' .. b .. ' ' .. (now + ttl))
if redis.call('PTTL', idx) < ttl then redis.call('PEXPIRE', idx, ttl) end
return {'OK', v}
`)
	scriptSavedDelete = redis.NewScript(`
local idx, vkey = KEYS[1], KEYS[2]
local meta = redis.call('HGET', idx, ARGV[1])
if not meta then return {'OK', '0'} end
local esc = string.match(meta, '^(%S+) ')
if esc ~= ARGV[2] then return {'OK', '0'} end
redis.call('HDEL', idx, ARGV[1])
redis.call('DEL', vkey)
return {'OK', '1'}
`)
	// KEYS[1] is the index, the rest the value keys it named when the caller read it.
	scriptSavedDrop = redis.NewScript(`
for i = 2, #KEYS do redis.call('DEL', KEYS[i]) end
for i = 1, #ARGV do redis.call('HDEL', KEYS[1], ARGV[i]) end
if redis.call('HLEN', KEYS[1]) == 0 then redis.call('DEL', KEYS[1]) end
return {'OK'}
`)
)

// keys of an owner: its index and the value key of id.
func (st *savedStore) keys(owner, id string) (idx, value string) {
	o := st.s.keys.digest("results owner", owner)
	base := st.s.prefix + "saved:{" + o + "}:"
	return base + "idx", base + "v:" + id
}

func (st *savedStore) scopeDigest(sc results.Scope) string {
	return st.s.keys.digest("results scope", sc.Principal, sc.AgentID, sc.SessionKey, sc.SessionID, sc.RunID)
}

func (st *savedStore) aad(id, scope string) []byte {
	return appendParts(nil, "codemode results v1", id, st.s.keys.keyID, scope)
}

// run executes a script on the owner's keys under the store's deadline.
func (st *savedStore) run(ctx context.Context, sc *redis.Script, keys []string, args ...any) ([]any, error) {
	ctx, cancel := context.WithTimeout(ctx, st.s.timeout)
	defer cancel()
	reply, err := sc.Run(ctx, st.s.rdb, keys, args...).Slice()
	if err != nil {
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
			err = fmt.Errorf("no answer within %v (%w)", st.s.timeout, err)
		}
		return nil, &runstore.StoreError{Err: err}
	}
	if len(reply) == 0 {
		return nil, &runstore.StoreError{Err: errors.New("empty script reply")}
	}
	return reply, nil
}

// Save implements results.Store.
func (st *savedStore) Save(ctx context.Context, sc results.Scope, value []byte, untrusted []string) (results.Entry, error) {
	if len(value) > results.MaxEntryBytes {
		return results.Entry{}, &results.Error{Code: "result_too_large", Message: fmt.Sprintf("results.save: the value is %d bytes of JSON (limit %d)", len(value), results.MaxEntryBytes)}
	}
	id := results.NewID()
	d := st.scopeDigest(sc)
	prov, _ := json.Marshal(untrusted)
	plain := make([]byte, 0, 1+binary.MaxVarintLen64+len(prov)+len(value))
	plain = append(plain, savedVersion)
	plain = binary.AppendUvarint(plain, uint64(len(prov)))
	plain = append(append(plain, prov...), value...)
	sealed := st.s.keys.seal(plain, st.aad(id, d))
	idx, vkey := st.keys(sc.Owner(), id)
	reply, err := st.run(ctx, scriptSavedPut, []string{idx, vkey}, id, d, len(value), ms(st.lim.TTL),
		st.lim.MaxEntriesPerRun, st.lim.MaxBytesPerRun, st.lim.MaxBytesPerOwner, maxOwnerEntries, sealed)
	if err != nil {
		return results.Entry{}, err
	}
	used := func() int64 {
		if len(reply) > 1 {
			s, _ := reply[1].(string)
			n, _ := strconv.ParseInt(s, 10, 64)
			return n
		}
		return 0
	}
	n := int64(len(value))
	switch status, _ := reply[0].(string); status {
	case "OK":
		return results.Entry{ID: id, Bytes: len(value), Untrusted: untrusted}, nil
	case "RUNCOUNT":
		return results.Entry{}, &results.Error{Code: "results_full", Message: fmt.Sprintf("results.save: this run already holds %d saved results (limit %d): delete results you no longer need (results.delete(id))", used(), st.lim.MaxEntriesPerRun)}
	case "RUNBYTES":
		return results.Entry{}, savedFull("this run", used(), n, st.lim.MaxBytesPerRun)
	case "OWNERBYTES":
		return results.Entry{}, savedFull("this session", used(), n, st.lim.MaxBytesPerOwner)
	default:
		return results.Entry{}, &runstore.StoreError{Err: fmt.Errorf("unexpected script reply %q", status)}
	}
}

func savedFull(what string, used, n, limit int64) error {
	return &results.Error{Code: "results_full", Message: fmt.Sprintf("results.save: %s would hold %d bytes with this value of %d (limit %d): delete results you no longer need (results.delete(id))", what, used+n, n, limit)}
}

// Load implements results.Store.
func (st *savedStore) Load(ctx context.Context, sc results.Scope, id string) ([]byte, results.Entry, error) {
	if !results.ValidID(id) {
		return nil, results.Entry{}, &results.Error{Code: "result_not_found", Message: fmt.Sprintf("results.load: %q is not a saved result of this run", id)}
	}
	d := st.scopeDigest(sc)
	idx, vkey := st.keys(sc.Owner(), id)
	// The sealed value is the JSON plus a nonce, tag and the provenance: its bound with room.
	maxSealed := results.MaxEntryBytes + 64<<10
	reply, err := st.run(ctx, scriptSavedGet, []string{idx, vkey}, id, d, ms(st.lim.TTL), maxSealed)
	if err != nil {
		return nil, results.Entry{}, err
	}
	switch status, _ := reply[0].(string); status {
	case "OK":
	case "NOTFOUND":
		return nil, results.Entry{}, &results.Error{Code: "result_not_found", Message: fmt.Sprintf("results.load: %q is not a saved result of this run (unknown, deleted or expired); save it again", id)}
	case "WRONGSCOPE":
		return nil, results.Entry{}, &results.Error{Code: "result_scope", Message: fmt.Sprintf("results: %q belongs to a different run or session", id)}
	case "TOOLARGE":
		return nil, results.Entry{}, &runstore.StoreError{Err: fmt.Errorf("saved result %s is larger than any value this store writes", id)}
	default:
		return nil, results.Entry{}, &runstore.StoreError{Err: fmt.Errorf("unexpected script reply %q", status)}
	}
	blob, _ := reply[1].(string)
	plain, err := st.s.keys.open([]byte(blob), st.aad(id, d))
	if err != nil {
		return nil, results.Entry{}, &runstore.StoreError{Err: fmt.Errorf("saved result %s: %w (tampered, or sealed with another key)", id, err)}
	}
	if len(plain) < 1 || plain[0] != savedVersion {
		return nil, results.Entry{}, &runstore.StoreError{Err: fmt.Errorf("saved result %s: unknown format", id)}
	}
	n, k := binary.Uvarint(plain[1:])
	if k <= 0 || n > uint64(len(plain)-1-k) || n > 64<<10 {
		return nil, results.Entry{}, &runstore.StoreError{Err: fmt.Errorf("saved result %s: malformed", id)}
	}
	var prov []string
	if err := json.Unmarshal(plain[1+k:1+k+int(n)], &prov); err != nil {
		return nil, results.Entry{}, &runstore.StoreError{Err: fmt.Errorf("saved result %s: malformed", id)}
	}
	value := plain[1+k+int(n):]
	return value, results.Entry{ID: id, Bytes: len(value), Untrusted: prov}, nil
}

// Delete implements results.Store.
func (st *savedStore) Delete(ctx context.Context, sc results.Scope, id string) (bool, error) {
	if !results.ValidID(id) {
		return false, nil
	}
	idx, vkey := st.keys(sc.Owner(), id)
	reply, err := st.run(ctx, scriptSavedDelete, []string{idx, vkey}, id, st.scopeDigest(sc))
	if err != nil {
		return false, err
	}
	s, _ := reply[len(reply)-1].(string)
	return s == "1", nil
}

// DropSession implements results.Store: the entries of a session nobody authenticated for
// (principal-owned results outlive sessions, like the principal's suspended runs).
func (st *savedStore) DropSession(ctx context.Context, sessionKey string) error {
	owner := results.Scope{SessionKey: sessionKey}.Owner()
	idx, _ := st.keys(owner, "")
	ctx, cancel := context.WithTimeout(ctx, st.s.timeout)
	defer cancel()
	ids, err := st.s.rdb.HKeys(ctx, idx).Result()
	if err != nil {
		return &runstore.StoreError{Err: err}
	}
	if len(ids) == 0 {
		return nil
	}
	keys := []string{idx}
	args := make([]any, 0, len(ids))
	for _, id := range ids {
		_, v := st.keys(owner, id)
		keys = append(keys, v)
		args = append(args, id)
	}
	_, err = st.run(ctx, scriptSavedDrop, keys, args...)
	return err
}
