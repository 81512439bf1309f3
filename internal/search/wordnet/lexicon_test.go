package wordnet

import (
	"reflect"
	"slices"
	"testing"
)

// requireLexicon is the embedded index; tests that need it fail clearly without it.
func requireLexicon(t testing.TB) *Lexicon {
	t.Helper()
	b := embedded()
	if len(b) == 0 {
		t.Fatal("the WordNet index is not embedded: run `make wordnet` (scripts/fetch-wordnet.sh)")
	}
	lx, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return lx
}

func related(lx *Lexicon, w string, kind int) []string {
	var out []string
	for _, r := range lx.Lookup(w, nil) {
		if r.Kind == kind {
			out = append(out, r.Word)
		}
	}
	return out
}

// issue 23 item 2: what the derived index knows.
func TestLexicon(t *testing.T) {
	lx := requireLexicon(t)
	t.Logf("%d words, %d bytes", lx.Len(), lx.Size())
	for _, c := range []struct {
		word string
		kind int
		want string
	}{
		{"delete", Derived, "deletion"},
		{"remove", Synonym, "take"},
		{"picture", Synonym, "image"},
		{"folder", Synonym, "booklet"},
		{"directory", Broader, "reference"},
		{"begin", Synonym, "start"},
		{"photograph", Synonym, "picture"},
		{"invoice", Synonym, "bill"},
	} {
		if got := related(lx, c.word, c.kind); !slices.Contains(got, c.want) {
			t.Errorf("%s kind %d: %q lacks %q", c.word, c.kind, got, c.want)
		}
	}
	for in, want := range map[string][]string{
		"files": {"file"}, "created": {"create"}, "deleting": {"delete"}, "stopped": {"stop"},
		"entries": {"entry"}, "boxes": {"box"}, "file": {"file"}, "zzzq": nil,
	} {
		got := lx.Lemmas(in, nil)
		if !reflect.DeepEqual(got, want) && !(len(want) > 0 && len(got) > 0 && got[0] == want[0]) {
			t.Errorf("Lemmas(%q) = %q, want %q", in, got, want)
		}
	}
}

// The derivation is deterministic and Parse accepts exactly what encode writes.
func TestEncodeParseRoundTrip(t *testing.T) {
	rel := map[string]map[string]uint8{
		"create": {"make": Synonym, "creation": Derived},
		"make":   {"create": Synonym},
		"folder": {"directory": Broader},
	}
	a, b := encode(rel), encode(rel)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("encode is not deterministic")
	}
	lx, err := Parse(a)
	if err != nil {
		t.Fatal(err)
	}
	got := lx.Lookup("create", nil)
	want := []Related{{"creation", Derived}, {"make", Synonym}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Lookup(create) = %v, want %v", got, want)
	}
	if lx.Lookup("absent", nil) != nil || lx.Len() != 5 {
		t.Errorf("len %d", lx.Len())
	}
}

// A corrupt index is refused, never a panic (hostile cache or asset bytes).
func FuzzParse(f *testing.F) {
	f.Add(encode(map[string]map[string]uint8{"aa": {"bb": 0}, "bb": {"aa": 1}}))
	f.Add([]byte(magic))
	f.Add([]byte("junk"))
	f.Fuzz(func(t *testing.T, b []byte) {
		lx, err := Parse(b)
		if err != nil {
			return
		}
		for i := 0; i < lx.Len(); i++ {
			lx.Lookup(lx.word(i), nil)
			lx.Lemmas(lx.word(i)+"s", nil)
		}
	})
}
