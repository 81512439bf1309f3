package catalog

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/internal/search/embed"
	"github.com/codemode-go/codemode/internal/search/embed/embedtest"
)

// issue 23 item 4: dense retrieval fused with lexical ranking, against a stand-in embeddings
// server; any failure falls back to lexical with a warning.
func TestDenseFusion(t *testing.T) {
	tools := []*api.Tool{
		{Name: "create_refund", Source: api.SourceMCP, Owner: "pay", Description: "Create a refund for a charge"},
		{Name: "list_charges", Source: api.SourceMCP, Owner: "pay", Description: "List charges"},
		{Name: "get_forecast", Source: api.SourceMCP, Owner: "wx", Description: "Get the weather for a city"},
	}
	s := embedtest.NewStandIn(t)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	client, err := embed.New(embed.Config{URL: s.URL + "/v1", Model: "stand-in", QueryTimeout: 2 * time.Second, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	c := Build(tools)
	c.EnableDense(client, log)
	deadline := time.Now().Add(10 * time.Second)
	for !c.DenseReady() {
		if time.Now().After(deadline) {
			t.Fatal("vectors never ready")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// No word of the query is in the refund tool; the stand-in's meanings link them.
	h := c.SearchMCPHits("moneyback", 2, "")
	if len(h) == 0 || h[0].Entry.Tool.Name != "create_refund" || h[0].Why != "similar in meaning (embeddings)" {
		t.Fatalf("dense hit: %+v", h)
	}
	// A lexical hit keeps its lexical explanation.
	h = c.SearchMCPHits("list charges", 1, "")
	if len(h) != 1 || h[0].Entry.Tool.Name != "list_charges" || !strings.HasPrefix(h[0].Why, "matched") {
		t.Fatalf("lexical hit in fusion: %+v", h)
	}
	// The server filter holds for dense hits too.
	if h := c.SearchMCPHits("moneyback", 5, "wx"); len(h) != 1 || h[0].Entry.Tool.Owner != "wx" {
		t.Fatalf("filter: %+v", h)
	}
	// The endpoint fails: lexical results, one warning, no error.
	s.Status = http.StatusServiceUnavailable
	if h := c.SearchMCPHits("list charges", 1, ""); len(h) != 1 || h[0].Entry.Tool.Name != "list_charges" {
		t.Fatalf("fallback: %+v", h)
	}
	c.SearchMCPHits("list charges", 1, "")
	if n := strings.Count(logs.String(), "search is lexical"); n != 1 {
		t.Fatalf("%d warnings (want 1, rate-limited):\n%s", n, logs.String())
	}
}
