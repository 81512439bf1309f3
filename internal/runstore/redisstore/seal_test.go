package redisstore

import (
	"bytes"
	"testing"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/runstore"
)

func TestSealBinding(t *testing.T) {
	k, err := newKeyring(testKey)
	if err != nil {
		t.Fatal(err)
	}
	k2, _ := newKeyring(otherKey)
	if k.keyID == k2.keyID || len(k.keyID) != 32 {
		t.Fatalf("key ids %q %q", k.keyID, k2.keyID)
	}
	rec := runstore.Record{Scope: scope, Snapshot: []byte("snap"), State: []byte("state")}
	d := k.scope(scope)
	blob := k.seal(encodeRecord(rec), k.recordAAD("run_a", d))
	other := scope
	other.SessionID = "x"
	noRun := scope
	noRun.RunID = ""
	cases := []struct {
		name string
		k    *keyring
		aad  []byte
		ok   bool
	}{
		{"same run and scope", k, k.recordAAD("run_a", d), true},
		{"other run id", k, k.recordAAD("run_b", d), false},
		{"other scope", k, k.recordAAD("run_a", k.scope(other)), false},
		{"run id unknown", k, k.recordAAD("run_a", k.scope(noRun)), false},
		{"other key", k2, k2.recordAAD("run_a", k2.scope(scope)), false},
		{"result AAD", k, k.resultAAD("run_a", "", d), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plain, err := c.k.open(blob, c.aad)
			if (err == nil) != c.ok {
				t.Fatalf("open: %v", err)
			}
			if c.ok {
				got, err := decodeRecord(plain)
				if err != nil || got.Scope != rec.Scope || !bytes.Equal(got.Snapshot, rec.Snapshot) || !bytes.Equal(got.State, rec.State) {
					t.Fatalf("decode: %+v %v", got, err)
				}
			}
		})
	}
	// Two seals of the same record differ (random nonces).
	if bytes.Equal(blob, k.seal(encodeRecord(rec), k.recordAAD("run_a", d))) {
		t.Fatal("sealing is deterministic")
	}
	// Digests are length-prefixed: moving a boundary changes them.
	a := k.scope(api.RunContext{AgentID: "ab", SessionKey: "c"})
	b := k.scope(api.RunContext{AgentID: "a", SessionKey: "bc"})
	if a.sc == b.sc {
		t.Fatal("scope digests are ambiguous")
	}
}

func TestRecordEncoding(t *testing.T) {
	cases := []runstore.Record{
		{},
		{Scope: scope},
		{Snapshot: []byte{0}},
		{State: []byte("{}")},
		{Scope: api.RunContext{AgentID: "ä\x00\"", Raw: true}, Snapshot: bytes.Repeat([]byte{7}, 70000), State: []byte("x")},
	}
	for i, rec := range cases {
		got, err := decodeRecord(encodeRecord(rec))
		if err != nil || got.Scope != rec.Scope || !bytes.Equal(got.Snapshot, rec.Snapshot) || !bytes.Equal(got.State, rec.State) {
			t.Errorf("case %d: %+v %v", i, got, err)
		}
	}
}

// The record decoder never panics and never returns more bytes than it was given.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(encodeRecord(runstore.Record{Scope: scope, Snapshot: []byte("snap"), State: []byte("state")}))
	f.Add([]byte{1, 2, '{', '}', 0})
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := decodeRecord(b)
		if err != nil {
			return
		}
		if len(rec.Snapshot)+len(rec.State) > len(b) {
			t.Fatalf("decoded %d+%d bytes from %d", len(rec.Snapshot), len(rec.State), len(b))
		}
	})
}

// Opening arbitrary bytes never panics and never yields anything but what was sealed.
func FuzzOpen(f *testing.F) {
	k, err := newKeyring(testKey)
	if err != nil {
		f.Fatal(err)
	}
	aad := k.recordAAD("run_a", k.scope(scope))
	f.Add(k.seal([]byte("x"), aad))
	f.Add([]byte{sealVersion})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		// The only genuine blobs are seals of "x" (made by any fuzz process: same key, own nonce).
		if plain, err := k.open(b, aad); err == nil && string(plain) != "x" {
			t.Fatalf("forged blob opened to %q", plain)
		}
	})
}
