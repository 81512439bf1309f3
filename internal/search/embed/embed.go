// Package embed is tool search's optional dense retrieval (issue 23 item 4): a client for an
// OpenAI-compatible /v1/embeddings endpoint (OpenAI, Ollama, vLLM, llama.cpp's server and TEI all
// speak it), an on-disk vector cache keyed by model and text hash, a cosine ranking over a
// catalog's tool texts, and reciprocal rank fusion with the lexical ranking.
//
// Nothing here may fail a search: the catalog embeds its tool texts in the background, a query is
// embedded under a short timeout, and any failure means the lexical ranking alone (logged, never
// an error in the cell). The endpoint is trusted with tool texts and queries, and for nothing
// else: its answers are bounded in size and dimension and checked before use.
package embed

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Bounds on what an endpoint can make us hold.
const (
	MaxDims          = 8192     // vector dimension
	MaxResponseBytes = 64 << 20 // one /v1/embeddings answer
	MaxTextBytes     = 8 << 10  // one text sent (tool text or query), cut at a rune boundary
	BatchSize        = 64       // texts per request when embedding a catalog
)

// Config configures a Client.
type Config struct {
	// URL is the API base ("http://localhost:11434/v1", "https://api.openai.com/v1"); requests go
	// to URL + "/embeddings".
	URL string
	// Model is sent as "model" and keys the cache.
	Model string
	// APIKey, when set, is sent as a bearer token.
	APIKey string
	// QueryTimeout bounds embedding one query (the catalog's texts have CatalogTimeout).
	QueryTimeout time.Duration
	// CacheDir holds cached vectors ("" disables the disk cache).
	CacheDir string
	// HTTP is the client used (nil: a default one).
	HTTP *http.Client
}

// CatalogTimeout bounds embedding one batch of catalog texts.
const CatalogTimeout = 2 * time.Minute

// Client embeds texts. It is safe for concurrent use.
type Client struct {
	cfg  Config
	url  string
	http *http.Client
	dir  string
}

// New checks the configuration and returns a client.
func New(cfg Config) (*Client, error) {
	if !strings.HasPrefix(cfg.URL, "http://") && !strings.HasPrefix(cfg.URL, "https://") {
		return nil, errors.New("embeddings url must be an http(s) URL")
	}
	if cfg.Model == "" {
		return nil, errors.New("embeddings model is required")
	}
	if cfg.QueryTimeout <= 0 {
		cfg.QueryTimeout = 300 * time.Millisecond
	}
	c := &Client{cfg: cfg, url: strings.TrimSuffix(cfg.URL, "/") + "/embeddings", http: cfg.HTTP}
	if c.http == nil {
		c.http = &http.Client{Timeout: CatalogTimeout}
	}
	if cfg.CacheDir != "" {
		m := sha256.Sum256([]byte(cfg.Model))
		c.dir = filepath.Join(cfg.CacheDir, hex.EncodeToString(m[:8]))
	}
	return c, nil
}

// Model is the configured model.
func (c *Client) Model() string { return c.cfg.Model }

// QueryTimeout is the configured query timeout.
func (c *Client) QueryTimeout() time.Duration { return c.cfg.QueryTimeout }

func clipText(s string) string {
	if len(s) <= MaxTextBytes {
		return s
	}
	i := MaxTextBytes
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i]
}

func (c *Client) key(text string) string {
	h := sha256.Sum256([]byte(c.cfg.Model + "\x00" + text))
	return hex.EncodeToString(h[:])
}

// Embed returns one unit-length vector per text, from the cache where it has them and from the
// endpoint (in batches of BatchSize) for the rest, which it then caches.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	var miss []int
	for i, t := range texts {
		texts[i] = clipText(t)
		if v := c.cached(texts[i]); v != nil {
			out[i] = v
			continue
		}
		miss = append(miss, i)
	}
	for start := 0; start < len(miss); start += BatchSize {
		idx := miss[start:min(start+BatchSize, len(miss))]
		batch := make([]string, len(idx))
		for j, i := range idx {
			batch[j] = texts[i]
		}
		vecs, err := c.request(ctx, batch)
		if err != nil {
			return nil, err
		}
		for j, i := range idx {
			out[i] = vecs[j]
			c.store(texts[i], vecs[j])
		}
	}
	if len(out) > 0 {
		d := len(out[0])
		for _, v := range out {
			if len(v) != d {
				return nil, errors.New("embeddings of different dimensions (did the model change?)")
			}
		}
	}
	return out, nil
}

// EmbedQuery embeds one query under the query timeout (never cached: queries are private and
// rarely repeat).
func (c *Client) EmbedQuery(ctx context.Context, q string) ([]float32, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.QueryTimeout)
	defer cancel()
	v, err := c.request(ctx, []string{clipText(q)})
	if err != nil {
		return nil, err
	}
	return v[0], nil
}

func (c *Client) request(ctx context.Context, texts []string) ([][]float32, error) {
	body, _ := json.Marshal(map[string]any{"model": c.cfg.Model, "input": texts})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxResponseBytes {
		return nil, fmt.Errorf("embeddings answer larger than %d bytes", MaxResponseBytes)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("embeddings endpoint answered %s", resp.Status)
	}
	var r struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("embeddings answer is not an embeddings list: %v", err)
	}
	if len(r.Data) != len(texts) {
		return nil, fmt.Errorf("embeddings answer has %d vectors for %d texts", len(r.Data), len(texts))
	}
	out := make([][]float32, len(texts))
	for _, d := range r.Data {
		if d.Index < 0 || d.Index >= len(texts) || out[d.Index] != nil {
			return nil, errors.New("embeddings answer has a bad or repeated index")
		}
		v, err := unit(d.Embedding)
		if err != nil {
			return nil, err
		}
		out[d.Index] = v
	}
	return out, nil
}

// unit checks a vector and scales it to length 1.
func unit(e []float64) ([]float32, error) {
	if len(e) == 0 || len(e) > MaxDims {
		return nil, fmt.Errorf("embedding of dimension %d (1–%d)", len(e), MaxDims)
	}
	var n float64
	for _, x := range e {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, errors.New("embedding has a non-finite value")
		}
		n += x * x
	}
	if n == 0 {
		return nil, errors.New("embedding is all zeros")
	}
	n = math.Sqrt(n)
	v := make([]float32, len(e))
	for i, x := range e {
		v[i] = float32(x / n)
	}
	return v, nil
}

func (c *Client) cached(text string) []float32 {
	if c.dir == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(c.dir, c.key(text)))
	if err != nil || len(b) == 0 || len(b)%4 != 0 || len(b)/4 > MaxDims {
		return nil
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		if f := float64(v[i]); math.IsNaN(f) || math.IsInf(f, 0) {
			return nil
		}
	}
	return v
}

// store writes a vector with a temp-file rename (concurrent processes never see half a file).
func (c *Client) store(text string, v []float32) {
	if c.dir == "" {
		return
	}
	if os.MkdirAll(c.dir, 0o700) != nil {
		return
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	f, err := os.CreateTemp(c.dir, ".vec.*.tmp")
	if err != nil {
		return
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil && cerr == nil {
		if os.Rename(f.Name(), filepath.Join(c.dir, c.key(text))) == nil {
			return
		}
	}
	os.Remove(f.Name())
}
