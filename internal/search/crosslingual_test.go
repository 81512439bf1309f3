package search

import (
	"strings"
	"testing"

	"github.com/codemode-go/codemode/internal/search/cedict"
)

// requireDictionary is the embedded CC-CEDICT index the cross-lingual tests need; they fail
// clearly without it.
func requireDictionary(t testing.TB) *cedict.Dict {
	t.Helper()
	d := dictionary()
	if d == nil {
		t.Fatal("the CC-CEDICT index is not embedded: run `make cedict` (scripts/fetch-cedict.sh)")
	}
	return d
}

// A catalog in two languages: English tools, and tools described in Chinese (as the real amap
// and cloudbase servers are).
var mixedDocs = []Doc{
	{ID: "en:create_customer", Name: "create_customer", Description: "Create a new customer in Stripe."},
	{ID: "en:search_files", Name: "search_files", Description: "Recursively search for files and directories matching a pattern."},
	{ID: "en:upload_file", Name: "upload_file", Description: "Upload a file through a provided element."},
	{ID: "en:generate_flow_diagram", Name: "generate_flow_diagram", Description: "Generate a flow diagram chart to show the steps of a process."},
	{ID: "en:list_pull_requests", Name: "list_pull_requests", Description: "List pull requests in a GitHub repository."},
	{ID: "zh:maps_weather", Name: "maps_weather", Description: "根据城市名称或者标准adcode查询指定城市的天气"},
	{ID: "zh:maps_bicycling", Name: "maps_bicycling", Description: "骑行路径规划用于规划骑行通勤方案"},
	{ID: "zh:queryDatabase", Name: "readNoSqlDatabaseContent", Description: "查询 NoSQL 數據庫中的数据记录，支持按条件筛选、分页、排序"},
}

func top(ix *Index, q string) (string, string) {
	hs := ix.Search(q, 3)
	if len(hs) == 0 {
		return "", ""
	}
	return hs[0].ID, hs[0].Why("")
}

// issue 23 round 2, methods 1–2 and the loanword and cognate matching: each query finds the one
// tool written in another language (or script), and the explanation says how.
func TestCrossLingual(t *testing.T) {
	requireDictionary(t)
	ix := NewIndex(mixedDocs)
	for _, c := range []struct {
		query, want, why string
	}{
		// English query, Chinese description: the tool's translated terms.
		{"city", "zh:maps_weather", "city (translated)"},
		{"plan a cycling route", "zh:maps_bicycling", "(translated)"},
		// Chinese query, English tools: the query's translations.
		{"创建客户", "en:create_customer", "→customer (translated)"},
		{"列出拉取请求", "en:list_pull_requests", "(translated)"},
		// Traditional characters meet simplified ones (數據庫 = 数据库), and the other way.
		{"查詢數據庫", "zh:queryDatabase", "数据库"},
		// Japanese: kanji read as simplified (検索 → 检索 → search), katakana by sound.
		{"ファイルを検索する", "en:search_files", "(translated)"},
		{"ファイルをアップロード", "en:upload_file", "アップロード→upload (translated)"},
		// Korean loanwords, with a particle (파일을 "the file").
		{"파일을 업로드", "en:upload_file", "(translated)"},
		// Spanish cognates of the catalog's English words.
		{"diagrama de flujo del proceso", "en:generate_flow_diagram", "diagrama≈diagram"},
	} {
		got, why := top(ix, c.query)
		if got != c.want || !strings.Contains(why, c.why) {
			t.Errorf("%q: top %s (%s), want %s with %q", c.query, got, why, c.want, c.why)
		}
	}
}

// Translations never outrank the literal word: an English query finds the English tool first
// when both languages describe the same thing.
func TestTranslationBelowLiteral(t *testing.T) {
	requireDictionary(t)
	ix := NewIndex([]Doc{
		{ID: "zh", Name: "weather_zh", Description: "查询指定城市的天气"},
		{ID: "en", Name: "weather_en", Description: "Get the weather of a city"},
	})
	hs := ix.Search("city weather", 2)
	if len(hs) != 2 || hs[0].ID != "en" {
		t.Fatalf("got %+v", hs)
	}
}

// Loanword skeletons (translit.go): a katakana or hangul rendering and the English word reduce
// to the same consonants; unrelated words do not.
func TestLoanSkeleton(t *testing.T) {
	for _, c := range []struct{ loan, english string }{
		{"スクレイピング", "scraping"}, {"アップロード", "upload"}, {"ウェブサイト", "website"}, {"ディレクトリ", "directory"},
		{"リクエスト", "request"}, {"メッセージ", "message"}, {"チャンネル", "channel"},
		{"オブジェクト", "object"}, {"ブラウザ", "browser"}, {"モニター", "monitor"},
		{"업로드", "upload"}, {"리퀘스트", "request"}, {"브라우저", "browser"}, {"버튼을", "button"},
	} {
		if a, b := loanSkeleton(c.loan), skeleton(c.english, true); a != b || a == "" {
			t.Errorf("%s → %q, %s → %q", c.loan, a, c.english, b)
		}
	}
	for _, c := range []struct{ loan, english string }{{"ファイル", "directory"}, {"アップロード", "download"}} {
		if loanSkeleton(c.loan) == skeleton(c.english, true) {
			t.Errorf("%s and %s share a skeleton", c.loan, c.english)
		}
	}
	if loanSkeleton("ア") != "" || loanSkeleton("abc") != "" {
		t.Error("too short or not a loanword")
	}
}

// Cognates (cognate.go) are found only for words the catalog lacks, and only near-prefix ones.
func TestCognates(t *testing.T) {
	ix := NewIndex(mixedDocs)
	for in, want := range map[string]string{"diagrama": "diagram", "documentacion": "", "producto": ""} {
		got := ix.cognates(in)
		if want == "" && len(got) != 0 || want != "" && (len(got) == 0 || got[0] != want) {
			t.Errorf("cognates(%q) = %q, want %q", in, got, want)
		}
	}
	if got := ix.cognates("diagram"); len(got) != 1 {
		t.Errorf("a catalog word is its own cognate: %q", got)
	}
}

// Hostile text through the whole cross-lingual path (index and query side): no panic, no empty
// or invalid terms, bounded results.
func FuzzCrossLingual(f *testing.F) {
	for _, s := range []string{"查詢數據庫", "ファイルをアップロード", "파일을 업로드", "diagrama", "\xff查", "ー", "ッ", "ャ", strings.Repeat("検", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		docs := append([]Doc{{ID: "fuzz", Name: "fuzz_tool", Description: s}}, mixedDocs...)
		ix := NewIndex(docs)
		for _, h := range ix.Search(s, 5) {
			if h.ID == "" || len(h.Matched) > maxExplained {
				t.Fatalf("bad hit %+v", h)
			}
		}
	})
}
