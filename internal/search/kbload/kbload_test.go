package kbload

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codemode-go/codemode/internal/quickjs/enginefetch"
)

type kb struct{ text string }

func source(t *testing.T, embedded []byte, pinned []byte) *Source[kb] {
	sum := sha256.Sum256(pinned)
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // no cached copy
	name := strings.ReplaceAll(t.Name(), "/", "_")
	return &Source[kb]{
		What: "the test index",
		Pin: func() enginefetch.Pin {
			return enginefetch.Pin{Package: "test-kb", Version: "1.0.0",
				Integrity: "sha512-" + strings.Repeat("A", 86) + "==", WasmSHA256: hex.EncodeToString(sum[:])}
		},
		Artifact: func() *enginefetch.Artifact {
			return &enginefetch.Artifact{What: "the test index", Members: []string{"package/x"}, File: "x.idx",
				Derive: func(m map[string][]byte) ([]byte, error) { return m["package/x"], nil }}
		},
		Embedded: func() []byte { return embedded },
		EnvFile:  "KBLOAD_TEST_FILE_" + name, EnvFetch: "KBLOAD_TEST_FETCH_" + name,
		MakeTarget: "test",
		Parse: func(b []byte) (*kb, error) {
			if len(b) == 0 {
				return nil, errors.New("empty")
			}
			return &kb{string(b)}, nil
		},
	}
}

// issue 23 round 2: the knowledge-base loader shared by WordNet and CC-CEDICT.
func TestSource(t *testing.T) {
	idx := []byte("the index")
	t.Run("embedded and pinned", func(t *testing.T) {
		s := source(t, idx, idx)
		if v := s.Default(); v == nil || v.text != "the index" {
			t.Fatalf("Default = %v", v)
		}
		if v, err := s.Wait(context.Background()); v == nil || err != nil {
			t.Fatalf("Wait = %v, %v", v, err)
		}
	})
	t.Run("embedded but not the pinned bytes", func(t *testing.T) {
		s := source(t, []byte("tampered"), idx)
		v, err := s.Wait(context.Background())
		if v != nil || err == nil || !strings.Contains(err.Error(), "make test") {
			t.Fatalf("Wait = %v, %v", v, err)
		}
	})
	t.Run("an index file from the environment", func(t *testing.T) {
		s := source(t, nil, idx)
		p := filepath.Join(t.TempDir(), "x.idx")
		if err := os.WriteFile(p, idx, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv(s.EnvFile, p)
		if v, err := s.Wait(context.Background()); v == nil || err != nil {
			t.Fatalf("Wait = %v, %v", v, err)
		}
	})
	t.Run("none, fetching off", func(t *testing.T) {
		s := source(t, nil, idx)
		t.Setenv(s.EnvFetch, "off")
		if v := s.Default(); v != nil {
			t.Fatal("an index out of nothing")
		}
		v, err := s.Wait(context.Background())
		if v != nil || err == nil || !strings.Contains(err.Error(), s.EnvFetch) {
			t.Fatalf("Wait = %v, %v", v, err)
		}
	})
}

func TestFetchOff(t *testing.T) {
	for v, want := range map[string]bool{"0": true, " OFF ": true, "no": true, "false": true, "": false, "1": false, "yes": false} {
		if FetchOff(v) != want {
			t.Errorf("FetchOff(%q) != %v", v, want)
		}
	}
}
