// Package results keeps the values cells save for later cells of the same run (issue 22 item
// 1): `results.save(value)` in one cell, `results.load(id)` in another, so that large
// intermediate data is fetched once. It is also where a final value too large for its result
// goes: the result then carries a bounded description and the id.
//
// Entries are detached JSON copies, scoped like suspended runs (principal, agent, session and
// run), bounded per run (count and bytes), per owner — the principal when one authenticated,
// else the session — and in all, and they expire a TTL after their last use; ending a session
// drops its entries. The in-memory Store is this process's; internal/runstore/redisstore has one
// shared by a fleet that survives restarts.
package results

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/codemode-go/codemode/api"
)

// Scope is whose an entry is: the run scope of the cells that may load it.
type Scope struct {
	Principal, AgentID, SessionKey, SessionID, RunID string
}

// ScopeOf is the scope of a run.
func ScopeOf(rc api.RunContext) Scope {
	return Scope{Principal: rc.Principal, AgentID: rc.AgentID, SessionKey: rc.SessionKey, SessionID: rc.SessionID, RunID: rc.RunID}
}

// Owner is who the per-owner bound counts: the principal when one authenticated, else the
// session.
func (s Scope) Owner() string {
	if s.Principal != "" {
		return "p\x00" + s.Principal
	}
	return "s\x00" + s.SessionKey
}

// Key identifies the scope (the run) exactly.
func (s Scope) Key() string {
	return s.Principal + "\x00" + s.AgentID + "\x00" + s.SessionKey + "\x00" + s.SessionID + "\x00" + s.RunID
}

// Limits bound a store. Zero fields take the defaults.
type Limits struct {
	// MaxEntriesPerRun and MaxBytesPerRun bound one run's entries (default 64 and 10 MiB).
	MaxEntriesPerRun int
	MaxBytesPerRun   int64
	// MaxBytesPerOwner bounds one principal's (or session's) entries over all its runs
	// (default 64 MiB).
	MaxBytesPerOwner int64
	// MaxBytes bounds the store (default 512 MiB).
	MaxBytes int64
	// TTL is how long an entry lives after it was last saved or loaded (default 1 hour).
	TTL time.Duration
}

// Defaults of Limits.
const (
	DefaultMaxEntriesPerRun = 64
	DefaultMaxBytesPerRun   = 10 << 20
	DefaultMaxBytesPerOwner = 64 << 20
	DefaultMaxBytes         = 512 << 20
	DefaultTTL              = time.Hour
	// MaxEntryBytes bounds one entry (and is what a cell's oversized value can be, whole).
	MaxEntryBytes = 8 << 20
	// maxEntriesPerOwner bounds the entries one owner holds over all its runs.
	maxEntriesPerOwner = 1024
)

// WithDefaults fills zero fields.
func (l Limits) WithDefaults() Limits {
	if l.MaxEntriesPerRun <= 0 {
		l.MaxEntriesPerRun = DefaultMaxEntriesPerRun
	}
	if l.MaxBytesPerRun <= 0 {
		l.MaxBytesPerRun = DefaultMaxBytesPerRun
	}
	if l.MaxBytesPerOwner <= 0 {
		l.MaxBytesPerOwner = DefaultMaxBytesPerOwner
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.TTL <= 0 {
		l.TTL = DefaultTTL
	}
	return l
}

// Entry describes a saved value.
type Entry struct {
	ID    string
	Bytes int
	// Untrusted are the untrusted sources the saving cell had received: a cell that loads the
	// value receives them too.
	Untrusted []string
}

// Store keeps saved values. Implementations are safe for concurrent use.
type Store interface {
	// Save keeps a copy of value (JSON) for scope and returns its entry; a full store or a
	// value over the bounds fails with an *Error (code "results_full" or "result_too_large").
	Save(ctx context.Context, sc Scope, value []byte, untrusted []string) (Entry, error)
	// Load returns a saved value and its entry, refreshing its TTL; an unknown, expired or
	// foreign id fails with an *Error (code "result_not_found" or "result_scope").
	Load(ctx context.Context, sc Scope, id string) ([]byte, Entry, error)
	// Delete drops an entry; it reports whether there was one of scope's.
	Delete(ctx context.Context, sc Scope, id string) (bool, error)
	// DropSession drops the entries of every run of a session nobody authenticated for (the
	// session ended); a principal's entries outlive its sessions, like its suspended runs, and
	// expire by their TTL.
	DropSession(ctx context.Context, sessionKey string) error
}

// Error is a refusal a cell can catch: its code is the guest error's code.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

// Guest is the error as the cell sees it.
func (e *Error) Guest() *api.ToolError {
	name := "Error"
	if e.Code == "results_full" || e.Code == "result_too_large" {
		name = "RangeError"
	}
	return &api.ToolError{Name: name, Code: e.Code, Message: e.Message}
}

// NewID makes an unguessable entry id: "res_" and 128 random bits.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "res_" + base64.RawURLEncoding.EncodeToString(b[:])
}

// ValidID reports whether id has the form NewID makes.
func ValidID(id string) bool {
	if len(id) != 4+22 || id[:4] != "res_" {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(id[4:])
	return err == nil
}

func notFound(id string) error {
	return &Error{Code: "result_not_found", Message: fmt.Sprintf("results.load: %q is not a saved result of this run (unknown, deleted or expired); save it again", clip(id))}
}

func wrongScope(id string) error {
	return &Error{Code: "result_scope", Message: fmt.Sprintf("results: %q belongs to a different run or session", clip(id))}
}

func tooLarge(n int) error {
	return &Error{Code: "result_too_large", Message: fmt.Sprintf("results.save: the value is %d bytes of JSON (limit %d)", n, MaxEntryBytes)}
}

func full(what string, used, n, limit int64) error {
	return &Error{Code: "results_full", Message: fmt.Sprintf("results.save: %s would hold %d bytes with this value of %d (limit %d): delete results you no longer need (results.delete(id))", what, used+n, n, limit)}
}

func clip(id string) string {
	if len(id) > 64 {
		return id[:cutRunes(id, 64)] + "…"
	}
	return id
}

// IsRefusal reports whether err is a store's refusal (not an outage).
func IsRefusal(err error) bool {
	var e *Error
	return errors.As(err, &e)
}
