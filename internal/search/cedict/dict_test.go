package cedict

import (
	"bytes"
	"slices"
	"testing"
)

// requireDict is the embedded index; tests that need it fail clearly without it.
func requireDict(t testing.TB) *Dict {
	t.Helper()
	b := embedded()
	if len(b) == 0 {
		t.Fatal("the CC-CEDICT index is not embedded: run `make cedict` (scripts/fetch-cedict.sh)")
	}
	d, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func english(d *Dict, w string) []string {
	i := d.Find(w)
	if i < 0 {
		return nil
	}
	return d.English(i, nil)
}

// issue 23 round 2: what the derived index knows.
func TestDict(t *testing.T) {
	d := requireDict(t)
	t.Logf("%d headwords, %d bytes", d.Len(), d.Size())
	for w, want := range map[string]string{
		"查询": "query", "文件": "file", "数据库": "database", "天气": "weather", "删除": "delete",
		"截图": "screenshot", "浏览器": "browser", "部署": "deploy", "日志": "log", "上传": "upload",
		"菜谱": "recipe", "登录": "log", "读": "read",
	} {
		if got := english(d, w); !slices.Contains(got, want) {
			t.Errorf("%s: %q lacks %q", w, got, want)
		}
	}
	// Traditional and Japanese forms map to simplified ones; simplified ones stay.
	for from, to := range map[rune]rune{'數': '数', '據': '据', '検': '检', '気': '气', '発': '发', '図': '图', '読': '读', '数': '数', '能': '能'} {
		if got := d.Variant(from); got != to {
			t.Errorf("Variant(%c) = %c, want %c", from, got, to)
		}
	}
	if d.MaxLen('数') < 3 || d.MaxLen('a') != 0 || d.Find("not a headword") != -1 {
		t.Error("MaxLen / Find")
	}
}

const sample = `export default {"all":[` +
	`["查詢","查询","cha2 xun2",["to check","to inquire","to consult (a document etc)","inquiry","query"],[],[]],` +
	`["登錄","登录","deng1 lu4",["to register","to log in"],[],[]],` +
	`["數據庫","数据库","shu4 ju4 ku4","(computing) database",[],[]],` +
	`["北京","北京","Bei3 jing1","Beijing, capital of the People's Republic of China",[],[]],` +
	`["讀","读","dou4",["comma","phrase marked by pause"],[],[]],` +
	`["讀","读","du2",["to read out; to read aloud","to read"],[],[]],` +
	`["數","数","shu4","number; figure",[],[]],` +
	`["據","据","ju4","according to; to act in accordance with",[],[]],` +
	`["庫","库","ku4","warehouse; storehouse",[],[]],` +
	`["検","検","jian3","Japanese variant of 檢|检",[],[]],` +
	`["檢","检","jian3","to check; to examine",[],[]],` +
	`["3D打印","3D打印","san1 D da3 yin4","3D printing",[],[]],` +
	`["的","的","de5","of; ~'s (possessive particle); see also 地[de5]",[],[]]` +
	`]}`

// The derivation keeps what it says (doc comment of derive.go), is deterministic, and Parse
// reads exactly what encode writes.
func TestDerive(t *testing.T) {
	files := map[string][]byte{Members[0]: []byte(sample)}
	a, err := Derive(files)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Derive(files)
	if !bytes.Equal(a, b) {
		t.Fatal("Derive is not deterministic")
	}
	d, err := Parse(a)
	if err != nil {
		t.Fatal(err)
	}
	for w, want := range map[string][]string{
		"查询":  {"check", "inquire", "consult", "inquiry", "query"},
		"登录":  {"register", "log", "in"},
		"数据库": {"database"},
		"读":   {"comma", "read", "out", "phrase", "marked", "pause", "read", "aloud"},
		"北京":  nil, // a proper name
		"的":   nil, // only a cross-reference and stop words
	} {
		if got := english(d, w); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", w, got, want)
		}
	}
	if d.Find("3D打印") != -1 {
		t.Error("a headword with Latin letters was kept")
	}
	for from, to := range map[rune]rune{'數': '数', '検': '检', '檢': '检', '数': '数'} {
		if got := d.Variant(from); got != to {
			t.Errorf("Variant(%c) = %c, want %c", from, got, to)
		}
	}
	if _, err := Derive(map[string][]byte{Members[0]: []byte("export default 42")}); err == nil {
		t.Error("a malformed all.js was accepted")
	}
}

// A corrupt index is refused, never a panic (hostile cache or asset bytes).
func FuzzParse(f *testing.F) {
	good, err := Derive(map[string][]byte{Members[0]: []byte(sample)})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add([]byte(magic))
	f.Add([]byte("junk"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := Parse(b)
		if err != nil {
			return
		}
		for i := 0; i < d.Len(); i++ {
			w := d.text[d.hoff[i]:d.hoff[i+1]]
			if d.Find(w) != i {
				t.Fatalf("Find(%q) != %d", w, i)
			}
			d.English(i, nil)
		}
	})
}
