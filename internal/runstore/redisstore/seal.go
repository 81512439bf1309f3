package redisstore

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/runstore"
)

// Everything a run stores in Redis is either sealed (AES-256-GCM, a random 96-bit nonce per
// blob) or a keyed digest (HMAC-SHA256, truncated to 128 bits). Redis never sees an agent id,
// session key, session id or run scope in the clear, only digests it can compare; whoever can
// read Redis learns sizes and timing, not content.
//
// A record's associated data is its run id plus the digests of its scope, so a record copied to
// another key, or whose stored scope digests were rewritten to another session's, fails to open.
// The digests are keyed functions of the scope, so binding them binds the scope itself; the
// plaintext carries the full scope, returned to the caller and checked against the digests.
//
// One master key (32 bytes, from the environment) gives two subkeys through HKDF, one per job,
// and a short key id stored beside each record: a replica configured with another key says so
// instead of reporting tampering.

// sealVersion is the first byte of every sealed blob.
const sealVersion = 1

// recordVersion is the first byte of a record's plaintext.
const recordVersion = 1

// maxScopeJSON bounds the scope inside a record's plaintext.
const maxScopeJSON = 64 << 10

type keyring struct {
	aead  cipher.AEAD
	macK  []byte
	keyID string
}

func newKeyring(master [32]byte) (*keyring, error) {
	encK, err := hkdf.Key(sha256.New, master[:], nil, "codemode runstore aead v1", 32)
	if err != nil {
		return nil, err
	}
	macK, err := hkdf.Key(sha256.New, master[:], nil, "codemode runstore mac v1", 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(encK)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return nil, err
	}
	k := &keyring{aead: aead, macK: macK}
	k.keyID = k.digest("key id")
	return k, nil
}

// digest is a keyed, length-prefixed digest of parts under a label (hex, 32 characters).
func (k *keyring) digest(label string, parts ...string) string {
	m := hmac.New(sha256.New, k.macK)
	writeParts(m, label, parts...)
	return hex.EncodeToString(m.Sum(nil)[:16])
}

func writeParts(h hash.Hash, label string, parts ...string) {
	var n [binary.MaxVarintLen64]byte
	for _, p := range append([]string{label}, parts...) {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(p)))])
		h.Write([]byte(p))
	}
}

// scopeDigests are the stored forms of a scope: sc covers agent, session key, session id and
// principal (W3's "same session" rule), r the run id (empty when unknown), sess the session key
// alone (the index CancelSession walks) and prin the principal the limits count it against
// (runstore.Principal; it also picks the accounting shard).
type scopeDigests struct {
	sc, r, sess, prin string
	// owned: the run belongs to its principal and to no session (runstore.OwnedByPrincipal).
	owned bool
}

func (k *keyring) scope(s api.RunContext) scopeDigests {
	d := scopeDigests{sc: k.digest("scope", s.AgentID, s.SessionKey, s.SessionID, s.Principal), sess: k.digest("session", s.SessionKey),
		prin: k.digest("principal", runstore.Principal(s)), owned: runstore.OwnedByPrincipal(s)}
	if s.RunID != "" {
		d.r = k.digest("run", s.RunID)
	}
	return d
}

func (k *keyring) ownerKey(id, owner string) string { return k.digest("owner", id, owner) }

func appendParts(b []byte, parts ...string) []byte {
	for _, p := range parts {
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
	}
	return b
}

func (k *keyring) recordAAD(id string, d scopeDigests) []byte {
	return appendParts(nil, "codemode runstore record v1", id, k.keyID, d.sc, d.r)
}

func (k *keyring) resultAAD(id, callID string, d scopeDigests) []byte {
	return appendParts(nil, "codemode runstore result v1", id, callID, k.keyID, d.sc)
}

func (k *keyring) seal(plain, aad []byte) []byte {
	out := make([]byte, 1, 1+k.aead.NonceSize()+len(plain)+k.aead.Overhead())
	out[0] = sealVersion
	return k.aead.Seal(out, nil, plain, aad)
}

var errOpen = errors.New("sealed blob does not open")

func (k *keyring) open(blob, aad []byte) ([]byte, error) {
	if len(blob) < 1+k.aead.NonceSize()+k.aead.Overhead() || blob[0] != sealVersion {
		return nil, errOpen
	}
	plain, err := k.aead.Open(nil, nil, blob[1:], aad)
	if err != nil {
		return nil, errOpen
	}
	return plain, nil
}

// encodeRecord lays a record out as: version, scope JSON, snapshot (each length-prefixed),
// then the state as the rest.
func encodeRecord(rec runstore.Record) []byte {
	sc, _ := json.Marshal(rec.Scope) // plain strings and bools: cannot fail
	b := make([]byte, 0, 1+3*binary.MaxVarintLen64+len(sc)+rec.Size())
	b = append(b, recordVersion)
	b = binary.AppendUvarint(b, uint64(len(sc)))
	b = append(b, sc...)
	b = binary.AppendUvarint(b, uint64(len(rec.Snapshot)))
	b = append(b, rec.Snapshot...)
	return append(b, rec.State...)
}

// decodeRecord is encodeRecord's inverse. Its input has been authenticated, but it is still
// parsed as if it were hostile: a bug or a future format must not panic the host.
func decodeRecord(b []byte) (runstore.Record, error) {
	bad := errors.New("malformed record")
	if len(b) < 1 || b[0] != recordVersion {
		return runstore.Record{}, bad
	}
	b = b[1:]
	field := func(limit uint64) ([]byte, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > limit || n > uint64(len(b)-k) {
			return nil, false
		}
		f := b[k : k+int(n)]
		b = b[k+int(n):]
		return f, true
	}
	sc, ok := field(maxScopeJSON)
	if !ok {
		return runstore.Record{}, bad
	}
	var rec runstore.Record
	if err := json.Unmarshal(sc, &rec.Scope); err != nil {
		return runstore.Record{}, bad
	}
	snap, ok := field(uint64(len(b)))
	if !ok {
		return runstore.Record{}, bad
	}
	rec.Snapshot = snap
	rec.State = b
	if len(rec.State) == 0 {
		rec.State = nil
	}
	if len(rec.Snapshot) == 0 {
		rec.Snapshot = nil
	}
	return rec, nil
}

// scopeAAD binds a run's sealed scope (returned by an Acquire whose caller holds the current
// version) to the run and its stored scope, like the record.
func (k *keyring) scopeAAD(id string, d scopeDigests) []byte {
	return appendParts(nil, "codemode runstore scope v1", id, k.keyID, d.sc, d.r)
}

func encodeScope(s api.RunContext) []byte {
	b, _ := json.Marshal(s) // plain strings and bools: cannot fail
	return b
}

func decodeScope(b []byte) (api.RunContext, error) {
	var s api.RunContext
	if len(b) > maxScopeJSON {
		return s, errors.New("scope too large")
	}
	err := json.Unmarshal(b, &s)
	return s, err
}
