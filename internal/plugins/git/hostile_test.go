package git

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
)

// writePack puts a hand-made pack (and its index) into the repository at dir: objs are the raw
// entries (header and data), hashes the names the index gives them.
func writePack(t *testing.T, dir string, hashes []plumbing.Hash, objs [][]byte) {
	t.Helper()
	var pack bytes.Buffer
	pack.WriteString("PACK")
	binary.Write(&pack, binary.BigEndian, uint32(2))
	binary.Write(&pack, binary.BigEndian, uint32(len(objs)))
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = pack.Len()
		pack.Write(o)
	}
	sum := sha1.Sum(pack.Bytes())
	pack.Write(sum[:])
	w := &idxfile.Writer{}
	w.OnHeader(uint32(len(objs)))
	for i, h := range hashes {
		w.Add(h, uint64(offsets[i]), 0)
	}
	w.OnFooter(plumbing.Hash(sum))
	idx, err := w.Index()
	if err != nil {
		t.Fatal(err)
	}
	var ib bytes.Buffer
	if _, err := idxfile.NewEncoder(&ib).Encode(idx); err != nil {
		t.Fatal(err)
	}
	packDir := filepath.Join(dir, ".git", "objects", "pack")
	os.MkdirAll(packDir, 0o755)
	name := filepath.Join(packDir, fmt.Sprintf("pack-%x", sum))
	if os.WriteFile(name+".pack", pack.Bytes(), 0o644) != nil || os.WriteFile(name+".idx", ib.Bytes(), 0o644) != nil {
		t.Fatal("cannot write the pack")
	}
}

// delta is a zlib-compressed delta that turns a 1-byte base into "x".
var delta = sync.OnceValue(func() []byte {
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write([]byte{1, 1, 1, 'x'})
	zw.Close()
	return z.Bytes()
})

func refDelta(base plumbing.Hash) []byte {
	return append(append([]byte{7<<4 | 4}, base[:]...), delta()...)
}

// ofsDelta is an OFS delta whose base starts back bytes before it.
func ofsDelta(back int) []byte {
	enc := []byte{byte(back & 0x7f)}
	for back >>= 7; back > 0; back >>= 7 {
		back--
		enc = append([]byte{byte(0x80 | back&0x7f)}, enc...)
	}
	return append(append([]byte{6<<4 | 4}, enc...), delta()...)
}

func blob() []byte {
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write([]byte("b"))
	zw.Close()
	return append([]byte{3<<4 | 1}, z.Bytes()...)
}

// A hostile repository must not make go-git recurse without end (issue 18 item 1): two REF
// deltas naming each other (about 100 bytes) were a fatal stack overflow in git_show, a delta
// chain deeper than git ever writes likewise, and an alternates file naming its own object
// directory recursed until the stack gave out. Each is now refused with a clear error.
func TestHostileRepositoryObjects(t *testing.T) {
	ha := plumbing.NewHash("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
	hb := plumbing.NewHash("bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb")
	t.Run("REF deltas in a loop", func(t *testing.T) {
		f := historyRepo(t)
		tools := pluginTools(t, Options{Workspace: f.dir}) // a pack that arrives later (a fetch)
		writePack(t, f.dir, []plumbing.Hash{ha, hb}, [][]byte{refDelta(hb), refDelta(ha)})
		for _, name := range []string{"git_show", "git_log"} {
			got := callErr(t, tools[name], map[string]any{"rev": ha.String()})
			if !strings.HasPrefix(got, name+": cannot read the repository") || !strings.Contains(got, "is corrupt or hostile: the delta at offset 12 is its own base") {
				t.Fatalf("%s: %s", name, got)
			}
		}
		// Present at start, it fails the plugin's start, as any broken repository does.
		if err := Plugin(Options{Workspace: f.dir}).Start(t.Context()); err == nil || !strings.Contains(err.Error(), "is corrupt or hostile") {
			t.Fatalf("start: %v", err)
		}
	})
	t.Run("a delta chain deeper than git writes", func(t *testing.T) {
		f := historyRepo(t)
		tools := pluginTools(t, Options{Workspace: f.dir})
		objs, hashes := [][]byte{blob()}, []plumbing.Hash{{1}}
		prev := len(blob())
		for i := range maxDeltaDepth + 1 {
			o := ofsDelta(prev)
			objs = append(objs, o)
			var h plumbing.Hash
			binary.BigEndian.PutUint32(h[:], uint32(i+2))
			hashes = append(hashes, h)
			prev = len(o)
		}
		writePack(t, f.dir, hashes, objs)
		got := callErr(t, tools["git_log"], map[string]any{})
		if !strings.Contains(got, "deeper than 4095") {
			t.Fatalf("%s", got)
		}
	})
	t.Run("alternates naming themselves", func(t *testing.T) {
		f := historyRepo(t)
		info := filepath.Join(f.dir, ".git", "objects", "info")
		os.MkdirAll(info, 0o755)
		os.WriteFile(filepath.Join(info, "alternates"), []byte("objects\n"), 0o644)
		got := callErr(t, pluginTools(t, Options{Workspace: f.dir})["git_show"], map[string]any{"rev": ha.String()})
		if !strings.Contains(got, "unknown revision") {
			t.Fatalf("%s", got)
		}
	})
	t.Run("a real pack with deltas passes", func(t *testing.T) {
		f := historyRepo(t)
		if err := f.repo.RepackObjects(&gogit.RepackConfig{}); err != nil {
			t.Fatal(err)
		}
		packs, _ := filepath.Glob(filepath.Join(f.dir, ".git", "objects", "pack", "*.pack"))
		if len(packs) == 0 {
			t.Fatal("no pack written")
		}
		var d logDetails
		mustCall(t, pluginTools(t, Options{Workspace: f.dir})["git_log"], map[string]any{}, &d)
		if len(d.Commits) == 0 {
			t.Fatal("no commits")
		}
	})
}
