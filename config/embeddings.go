package config

import (
	"path/filepath"
	"strings"
)

// SearchEmbeddings turns on dense retrieval for tool search (tools.codeMode.searchEmbeddings):
// tool texts are embedded once through an OpenAI-compatible /v1/embeddings endpoint (vectors
// cached on disk), each query is embedded under a short timeout, and the two rankings are fused.
// Any failure falls back to lexical search with a warning. Nil (the default) means lexical only.
type SearchEmbeddings struct {
	// URL is the API base, e.g. "http://localhost:11434/v1" (Ollama) or "https://api.openai.com/v1".
	URL string
	// Model is the embedding model ("nomic-embed-text", "text-embedding-3-small", "bge-m3").
	Model string
	// APIKey is sent as a bearer token when set ({env} or {file}; never the value itself).
	APIKey Secret
	// QueryTimeoutMs bounds embedding one query: 10–10000, default 300.
	QueryTimeoutMs int
	// CacheDir holds the cached vectors: an absolute path; "" means <user cache dir>/codemode/embeddings.
	CacheDir string
}

var rangeEmbeddingsQueryTimeoutMs = struct{ lo, hi int64 }{10, 10000}

func (d *decoder) searchEmbeddings(p path, v any) *SearchEmbeddings {
	m, ok := d.object(p, v, "url", "model", "apiKey", "queryTimeoutMs", "cacheDir")
	if !ok {
		return nil
	}
	e := &SearchEmbeddings{QueryTimeoutMs: 300}
	d.setString(p, m, "url", &e.URL)
	d.setString(p, m, "model", &e.Model)
	if v, ok := m["apiKey"]; ok {
		d.secret(p.key("apiKey"), v, &e.APIKey)
	}
	setInt(d, p, m, "queryTimeoutMs", rangeEmbeddingsQueryTimeoutMs.lo, rangeEmbeddingsQueryTimeoutMs.hi, &e.QueryTimeoutMs)
	d.setString(p, m, "cacheDir", &e.CacheDir)
	switch {
	case !strings.HasPrefix(e.URL, "http://") && !strings.HasPrefix(e.URL, "https://"):
		d.errorf(p.key("url"), "expected the http(s) base URL of an OpenAI-compatible embeddings API, such as \"http://localhost:11434/v1\"")
	case e.Model == "":
		d.errorf(p.key("model"), "an embedding model is required, such as \"nomic-embed-text\"")
	case e.CacheDir != "" && !filepath.IsAbs(e.CacheDir):
		d.errorf(p.key("cacheDir"), "must be an absolute path, got %q", e.CacheDir)
	}
	return e
}
