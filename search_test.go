package codemode

import (
	"strings"
	"testing"
	"time"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/search/embed/embedtest"
)

// issue 23 item 4, end to end: with searchEmbeddings configured, a cell's tools.search finds a tool
// by meaning through the (stand-in) embeddings endpoint; when the endpoint goes away, search is
// lexical and the cell sees no error.
func TestSearchEmbeddingsEndToEnd(t *testing.T) {
	s := embedtest.NewStandIn(t)
	rt := newRuntime(t, testConfig(t, func(c *config.Config) {
		c.Tools.CodeMode.SearchEmbeddings = &config.SearchEmbeddings{URL: s.URL + "/v1", Model: "stand-in", QueryTimeoutMs: 2000, CacheDir: t.TempDir()}
	}))
	tools := append(fixtureTools(), &api.Tool{Name: "create_refund", Owner: "pay", Description: "Create a refund for a charge"})
	surf := rt.Activate(api.RunContext{}, tools)
	cell := `const [h] = await tools.search("moneyback", {limit: 1}); return h ? h.id + " | " + h.why : "none"`
	deadline := time.Now().Add(10 * time.Second)
	var got string
	for {
		got = mustComplete(t, execCode(t, surf, cell))
		if strings.Contains(got, "embeddings") || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond) // the catalog's vectors are computed in the background
	}
	if got != `"native:pay:create_refund | similar in meaning (embeddings)"` {
		t.Fatalf("got %s", got)
	}
	s.Close()
	if got := mustComplete(t, execCode(t, surf, `return (await tools.search("refund")).map(h => h.id)`)); !strings.Contains(got, "native:pay:create_refund") {
		t.Fatalf("fallback: %s", got)
	}
}
