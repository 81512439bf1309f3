package enginefetch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// issue 23: the fetch is generic — any deterministic artifact derived from several members of a
// pinned tarball gets the module's checks (integrity first, bounded members, pinned sha256 of the
// result, verified cache).
func TestArtifact(t *testing.T) {
	noLeaks(t)
	a, b := []byte("alpha data"), []byte("beta data")
	tgz := tarball(t,
		entry{name: "package/package.json", body: []byte(`{}`)},
		entry{name: "package/dict/a", body: a},
		entry{name: "package/dict/b", body: b},
	)
	derive := func(m map[string][]byte) ([]byte, error) {
		return bytes.Join([][]byte{m["package/dict/a"], m["package/dict/b"]}, []byte("|")), nil
	}
	want, _ := derive(map[string][]byte{"package/dict/a": a, "package/dict/b": b})
	pin := pinFor(tgz, want)
	art := &Artifact{What: "the test index", Members: []string{"package/dict/a", "package/dict/b"}, Derive: derive, File: "test.idx"}
	reg := newRegistry(t, tgz)
	o := reg.options(t, pin)
	o.Artifact = art
	got, err := Get(context.Background(), o)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("Get = %q, %v", got, err)
	}
	cached := filepath.Join(o.Dir, pin.cacheName(), "test.idx")
	if !bytes.Equal(readFile(t, cached), want) {
		t.Fatal("not cached under the artifact's file name")
	}
	// A cache hit makes no request; a tampered cache is refetched.
	if _, err := Get(context.Background(), o); err != nil || reg.hits.Load() != 1 {
		t.Fatalf("cache hit: %v, %d requests", err, reg.hits.Load())
	}
	os.WriteFile(cached, []byte("tampered"), 0o644)
	if got, err := Get(context.Background(), o); err != nil || !bytes.Equal(got, want) || reg.hits.Load() != 2 {
		t.Fatalf("tampered cache: %q, %v, %d requests", got, err, reg.hits.Load())
	}

	// The same checks for a tarball in hand.
	if got, err := FromTarball(tgz, pin, art, true); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("FromTarball = %q, %v", got, err)
	}
	bad := append(bytes.Clone(tgz), 0)
	if _, err := FromTarball(bad, pin, art, true); err == nil || !strings.Contains(err.Error(), "integrity mismatch") {
		t.Fatalf("tampered tarball: %v", err)
	}
	// A derivation that does not give the pinned bytes is refused (and the sum can be printed).
	other := pin
	s := sha256.Sum256([]byte("something else"))
	other.WasmSHA256 = hex.EncodeToString(s[:])
	if _, err := FromTarball(tgz, other, art, true); err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("wrong derived sum: %v", err)
	}
	other.WasmSHA256 = ""
	if got, err := FromTarball(tgz, other, art, false); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("unchecked sum: %q, %v", got, err)
	}
	// Every member must be present.
	missing := &Artifact{What: "x", Members: []string{"package/dict/a", "package/dict/c"}, Derive: derive, File: "x.idx"}
	if _, err := FromTarball(tgz, pin, missing, true); err == nil || !strings.Contains(err.Error(), "no package/dict/c") {
		t.Fatalf("missing member: %v", err)
	}
	// The cache file name cannot leave the pin's directory.
	for _, name := range []string{"../x", "a/b", ".hidden", ""} {
		o2 := o
		o2.Artifact = &Artifact{What: "x", Members: art.Members, Derive: derive, File: name}
		if _, err := Get(context.Background(), o2); err == nil {
			t.Errorf("file name %q accepted", name)
		}
	}
}
