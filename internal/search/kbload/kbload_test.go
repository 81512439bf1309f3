package kbload

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

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

// tarball is a gzipped npm-style tarball with one member, package/x.
func tarball(t *testing.T, body []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: "package/x", Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// spec is a knowledge base whose assets pin tgz and the index idx, with embedded (nil: none) as
// the index `make` put next to the pin.
func spec(t *testing.T, tgz, idx, embedded []byte) Spec[kb] {
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // no cached copy
	s512, s256 := sha512.Sum512(tgz), sha256.Sum256(idx)
	pin := fmt.Sprintf(`{"package":"test-kb","version":"1.0.0","integrity":"sha512-%s","indexSha256":"%x"}`,
		base64.StdEncoding.EncodeToString(s512[:]), s256)
	files := fstest.MapFS{"assets/test-kb.json": {Data: []byte(pin)}}
	if embedded != nil {
		files["assets/x.idx"] = &fstest.MapFile{Data: embedded}
	}
	name := strings.ReplaceAll(t.Name(), "/", "_")
	return Spec[kb]{
		What: "the test index", Assets: files, PinFile: "assets/test-kb.json", IndexFile: "x.idx",
		Members: []string{"package/x"},
		Derive:  func(m map[string][]byte) ([]byte, error) { return m["package/x"], nil },
		Parse:   func(b []byte) (*kb, error) { return &kb{string(b)}, nil },
		EnvFile: "KBLOAD_TEST_FILE_" + name, EnvFetch: "KBLOAD_TEST_FETCH_" + name, MakeTarget: "test",
	}
}

// issue 23 round 2: New reads a package's pin and embedded index from its assets, the way the
// WordNet and CC-CEDICT packages declare theirs.
func TestNew(t *testing.T) {
	idx := []byte("the index")
	tgz := tarball(t, idx)
	t.Run("pin and embedded index", func(t *testing.T) {
		s := New(spec(t, tgz, idx, idx))
		if p := s.Pin(); p.String() != "test-kb@1.0.0" || !strings.HasPrefix(p.Integrity, "sha512-") || len(p.WasmSHA256) != 64 {
			t.Fatalf("Pin = %+v", p)
		}
		if a := s.Artifact(); a.What != "the test index" || a.File != "x.idx" || !slices.Equal(a.Members, []string{"package/x"}) {
			t.Fatalf("Artifact = %+v", a)
		}
		if v, err := s.Wait(context.Background()); v == nil || v.text != "the index" || err != nil {
			t.Fatalf("Wait = %v, %v", v, err)
		}
	})
	t.Run("embedded index not the pinned one", func(t *testing.T) {
		s := New(spec(t, tgz, idx, []byte("tampered")))
		if v, err := s.Wait(context.Background()); v != nil || err == nil || !strings.Contains(err.Error(), "make test") {
			t.Fatalf("Wait = %v, %v", v, err)
		}
	})
	t.Run("no embedded index, fetching off", func(t *testing.T) {
		sp := spec(t, tgz, idx, nil)
		t.Setenv(sp.EnvFetch, "0")
		s := New(sp)
		if b := s.Embedded(); len(b) != 0 {
			t.Fatalf("Embedded = %q", b)
		}
		if v, err := s.Wait(context.Background()); v != nil || err == nil || !strings.Contains(err.Error(), sp.EnvFetch) {
			t.Fatalf("Wait = %v, %v", v, err)
		}
	})
	t.Run("FromTarball checks both hashes", func(t *testing.T) {
		s := New(spec(t, tgz, idx, nil))
		if b, err := s.FromTarball(tgz, true); err != nil || !bytes.Equal(b, idx) {
			t.Fatalf("FromTarball = %q, %v", b, err)
		}
		if _, err := s.FromTarball(tarball(t, []byte("other")), true); err == nil || !strings.Contains(err.Error(), "integrity mismatch") {
			t.Fatalf("another tarball: %v", err)
		}
		moved := New(spec(t, tgz, []byte("the old index"), nil))
		if _, err := moved.FromTarball(tgz, true); err == nil || !strings.Contains(err.Error(), "sha256") {
			t.Fatalf("an index not the pinned one: %v", err)
		}
		if b, err := moved.FromTarball(tgz, false); err != nil || !bytes.Equal(b, idx) {
			t.Fatalf("FromTarball without the index check = %q, %v", b, err)
		}
	})
	t.Run("a missing pin file panics", func(t *testing.T) {
		sp := spec(t, tgz, idx, nil)
		sp.PinFile = "assets/absent.json"
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "assets/absent.json is missing") {
				t.Fatalf("recover = %v", r)
			}
		}()
		New(sp).Pin()
	})
}

// issue 23 round 2: cmd/kb-index, which scripts/fetch-wordnet.sh and fetch-cedict.sh run.
func TestCommand(t *testing.T) {
	idx := []byte("the index")
	tgz := tarball(t, idx)
	dir := t.TempDir()
	tgzPath, out := filepath.Join(dir, "test-kb-1.0.0.tgz"), filepath.Join(dir, "out.idx")
	if err := os.WriteFile(tgzPath, tgz, 0o644); err != nil {
		t.Fatal(err)
	}
	pinned := New(spec(t, tgz, idx, nil))
	moved := New(spec(t, tgz, []byte("the old index"), nil))
	kbs := map[string]Deriver{"pinned": pinned.FromTarball, "moved": moved.FromTarball}
	sum := sha256.Sum256(idx)
	for _, c := range []struct {
		name       string
		args       []string
		code       int
		stdout     string
		stderr     string
		wroteIndex bool
	}{
		{"derive and write", []string{"pinned", tgzPath, out}, 0, "", "", true},
		{"print the sha256", []string{"-print-sha256", "moved", tgzPath}, 0, hex.EncodeToString(sum[:]) + "\n", "", false},
		{"the index is not the pinned one", []string{"moved", tgzPath, out}, 1, "", "sha256", false},
		{"no such tarball", []string{"pinned", filepath.Join(dir, "absent.tgz"), out}, 1, "", "absent.tgz", false},
		{"unknown knowledge base", []string{"other", tgzPath, out}, 2, "", "usage: kb-index [-print-sha256] moved|pinned TARBALL [OUT]", false},
		{"no OUT", []string{"pinned", tgzPath}, 2, "", "usage:", false},
		{"unknown flag", []string{"-x", "pinned", tgzPath, out}, 2, "", "-x", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_ = os.Remove(out)
			var stdout, stderr bytes.Buffer
			if code := Command(c.args, &stdout, &stderr, kbs); code != c.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, c.code, stderr.String())
			}
			if stdout.String() != c.stdout || !strings.Contains(stderr.String(), c.stderr) || c.stderr == "" && stderr.Len() != 0 {
				t.Fatalf("stdout %q, stderr %q", stdout.String(), stderr.String())
			}
			b, err := os.ReadFile(out)
			if c.wroteIndex != (err == nil) || c.wroteIndex && !bytes.Equal(b, idx) {
				t.Fatalf("out = %q, %v", b, err)
			}
		})
	}
}

// The index encoding both knowledge bases share: what AppendFrontCoded writes, Reader reads back,
// and a short or inconsistent index makes a read fail rather than panic.
func TestCodec(t *testing.T) {
	words := []string{"", "a", "ab", "abc", "abd", "b", "数", "数据", "数据库"}
	b := AppendFrontCoded([]byte("MAGIC\x01"), words, func(out []byte, w string) []byte {
		return binary.AppendUvarint(out, uint64(len(w)))
	})
	r, ok := NewReader(b, "MAGIC\x01")
	if !ok {
		t.Fatal("NewReader refused its magic")
	}
	prev := ""
	for _, want := range words {
		w, ok := r.Word(prev, 16)
		n, ok2 := r.Uvarint()
		if !ok || !ok2 || w != want || n != uint64(len(want)) {
			t.Fatalf("Word = %q %v, Uvarint = %d %v; want %q", w, ok, n, ok2, want)
		}
		prev = w
	}
	if len(r.Rest) != 0 {
		t.Fatalf("%d bytes left", len(r.Rest))
	}
	if _, ok := r.Uvarint(); ok {
		t.Error("a uvarint out of nothing")
	}
	if _, ok := NewReader([]byte("MAG"), "MAGIC\x01"); ok {
		t.Error("a short magic was accepted")
	}
	if _, ok := NewReader([]byte("MAGIC\x02rest"), "MAGIC\x01"); ok {
		t.Error("another format version was accepted")
	}
	for _, c := range []struct {
		name string
		b    []byte
		prev string
		max  uint64
	}{
		{"shares more than prev has", []byte{3, 1, 'x'}, "ab", 16},
		{"longer than maxLen", []byte{0, 3, 'x', 'y', 'z'}, "", 2},
		{"longer than the index", []byte{0, 5, 'x'}, "", 16},
		{"no length", []byte{0}, "", 16},
		{"truncated uvarint", []byte{0x80}, "", 16},
	} {
		if w, ok := (&Reader{Rest: c.b}).Word(c.prev, c.max); ok {
			t.Errorf("%s: read %q", c.name, w)
		}
	}
}
