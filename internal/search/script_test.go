package search

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// issue 23 item 1: Unicode-aware analysis.
func TestTermsMultilingual(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		// CJK runs become overlapping bigrams; a lone character stays a unigram.
		{"查询天气", []string{"查询", "询天", "天气"}},
		{"查", []string{"查"}},
		// A script change ends a word (mixed-script identifiers and prose).
		{"adcode查询", []string{"adcod", "查询"}},
		{"POI智能标注", []string{"poi", "智能", "能标", "标注"}},
		// Japanese (round two): a katakana run is one word, hiragana (grammar) is dropped, kanji
		// runs are bigrams like Chinese.
		{"ナレッジグラフ", []string{"ナレッジグラフ"}},
		{"ファイルを作成する", []string{"ファイル", "作成"}},
		// Hangul has its own class.
		{"마이그레이션 TypeScript", []string{"마이", "이그", "그레", "레이", "이션", "type", "script"}},
		// NFKC: full-width letters and punctuation.
		{"ＡＰＩ，数据", []string{"api", "数据"}},
		// Latin diacritics are folded and the folded word is not stemmed.
		{"Café crème files", []string{"cafe", "creme", "file"}},
		// Cyrillic is spaced: words, lowercased, never stemmed or folded (й stays).
		{"Построй маршрут", []string{"построй", "маршрут"}},
		// Voiced kana are not folded.
		{"ガイド", []string{"ガイド"}},
	}
	for _, tt := range tests {
		if got := Terms(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Terms(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// A Chinese description is found by a Chinese query that does not repeat it
// (issue 23: "a Chinese description matches nothing unless the query repeats it
// exactly").
func TestChineseQueryFindsChineseTool(t *testing.T) {
	ix := NewIndex([]Doc{
		{ID: "a", Name: "maps_weather", Description: "根据城市名称或者标准adcode查询指定城市的天气"},
		{ID: "b", Name: "maps_bicycling", Description: "骑行路径规划用于规划骑行通勤方案"},
		{ID: "c", Name: "slack_post_message", Description: "Post a new message to a Slack channel"},
	})
	for q, want := range map[string]string{
		"北京明天的天气怎么样":    "a",
		"帮我规划一条骑行路线":    "b",
		"查一下天气预报":       "a",
		"post to slack": "c",
	} {
		hits := ix.Search(q, 3)
		if len(hits) == 0 || hits[0].ID != want {
			t.Errorf("Search(%q) = %v, want %s first", q, ids(hits), want)
		}
	}
}

func FuzzTerms(f *testing.F) {
	for _, s := range []string{"", "查询天气", "adcode查询", "Café", "ＡＰＩ", "\xff\xfe", "a\u0301\u0301", "ナ\u3099", strings.Repeat("数", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, term := range Terms(s) {
			if term == "" {
				t.Fatalf("empty term from %q", s)
			}
			if utf8.ValidString(s) && !utf8.ValidString(term) {
				t.Fatalf("invalid UTF-8 term %q from valid %q", term, s)
			}
		}
	})
}
