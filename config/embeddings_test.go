package config

import (
	"strings"
	"testing"
)

// issue 23 item 4: every searchEmbeddings key is validated with an error naming it.
func TestSearchEmbeddingsConfig(t *testing.T) {
	ok := `{tools: {codeMode: {searchEmbeddings: {url: "http://localhost:11434/v1", model: "nomic-embed-text", apiKey: {env: "EMB_KEY"}, queryTimeoutMs: 500, cacheDir: "/tmp/emb"}}}}`
	cfg, err := Parse([]byte(ok), "test.json5")
	if err != nil {
		t.Fatal(err)
	}
	e := cfg.Tools.CodeMode.SearchEmbeddings
	if e == nil || e.URL != "http://localhost:11434/v1" || e.Model != "nomic-embed-text" || e.APIKey.Env != "EMB_KEY" || e.QueryTimeoutMs != 500 || e.CacheDir != "/tmp/emb" {
		t.Fatalf("%+v", e)
	}
	if cfg, _ := Parse([]byte(`{tools: {codeMode: {searchEmbeddings: {url: "https://x/v1", model: "m"}}}}`), "t.json5"); cfg.Tools.CodeMode.SearchEmbeddings.QueryTimeoutMs != 300 {
		t.Error("default queryTimeoutMs is not 300")
	}
	if cfg, _ := Parse([]byte(`{}`), "t.json5"); cfg.Tools.CodeMode.SearchEmbeddings != nil {
		t.Error("embeddings on by default")
	}
	for in, want := range map[string]string{
		`{url: "localhost", model: "m"}`:                        "searchEmbeddings.url",
		`{url: "http://x/v1"}`:                                  "searchEmbeddings.model",
		`{url: "http://x/v1", model: "m", queryTimeoutMs: 5}`:   "searchEmbeddings.queryTimeoutMs",
		`{url: "http://x/v1", model: "m", queryTimeoutMs: 1e9}`: "searchEmbeddings.queryTimeoutMs",
		`{url: "http://x/v1", model: "m", cacheDir: "rel"}`:     "searchEmbeddings.cacheDir",
		`{url: "http://x/v1", model: "m", apiKey: "sk-inline"}`: "searchEmbeddings.apiKey",
		`{url: "http://x/v1", model: "m", dims: 3}`:             "searchEmbeddings.dims",
		`"http://x/v1"`: "searchEmbeddings",
	} {
		_, err := Parse([]byte(`{tools: {codeMode: {searchEmbeddings: `+in+`}}}`), "t.json5")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v (want an error naming %s)", in, err, want)
		}
	}
}
