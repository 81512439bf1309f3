package catalog

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/codemode-go/codemode/internal/search"
	"github.com/codemode-go/codemode/internal/search/embed"
)

// Optional dense retrieval (issue 23 item 4): with an embeddings client, the catalog embeds its
// entries' texts once in the background (vectors cached on disk by the client, so a catalog
// rebuilt after tools/list_changed only embeds what changed) and each search fuses the lexical
// ranking with the cosine ranking of the query's embedding by reciprocal rank fusion. Until the
// vectors are ready, and whenever the endpoint fails or is slow, search is lexical (a warning is
// logged, at most once a minute); a cell never sees an error from it.

// fusionDepth is how many candidates each ranking contributes to the fusion.
const fusionDepth = 50

type dense struct {
	client *embed.Client
	log    *slog.Logger
	guest  atomic.Pointer[[][]float32]
	mcp    atomic.Pointer[[][]float32]
	warned atomic.Int64 // unix seconds of the last warning
}

// EnableDense starts embedding the catalog's entries with client (nil log: slog.Default). It
// returns at once; call it once, right after Build.
func (c *Catalog) EnableDense(client *embed.Client, log *slog.Logger) {
	if client == nil || c.dense != nil {
		return
	}
	if log == nil {
		log = slog.Default()
	}
	d := &dense{client: client, log: log}
	c.dense = d
	go func() {
		for _, part := range []struct {
			entries []*Entry
			into    *atomic.Pointer[[][]float32]
		}{{c.guest, &d.guest}, {c.mcp, &d.mcp}} {
			if len(part.entries) == 0 {
				continue
			}
			texts := make([]string, len(part.entries))
			for i, e := range part.entries {
				texts[i] = denseText(e)
			}
			ctx, cancel := context.WithTimeout(context.Background(), embed.CatalogTimeout)
			vecs, err := client.Embed(ctx, texts)
			cancel()
			if err != nil {
				d.warn("tool texts could not be embedded: tool search stays lexical for this catalog", err)
				return
			}
			part.into.Store(&vecs)
		}
	}()
}

// DenseReady reports whether both indexes have their vectors (tests, status).
func (c *Catalog) DenseReady() bool {
	if c.dense == nil {
		return false
	}
	return (len(c.guest) == 0 || c.dense.guest.Load() != nil) && (len(c.mcp) == 0 || c.dense.mcp.Load() != nil)
}

func denseText(e *Entry) string {
	var b strings.Builder
	b.WriteString(e.Tool.Name)
	if e.Tool.Label != "" {
		b.WriteString(" — " + e.Tool.Label)
	}
	if si := e.Tool.Server; si != nil {
		b.WriteString(" (" + cmpOr(si.Title, si.Name) + ")")
	}
	b.WriteString(": ")
	b.WriteString(clip(e.Tool.Description, 1024))
	return b.String()
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (d *dense) warn(msg string, err error) {
	now := time.Now().Unix()
	if last := d.warned.Load(); now-last >= 60 && d.warned.CompareAndSwap(last, now) {
		d.log.Warn(msg, "model", d.client.Model(), "err", err)
	}
}

// fuse re-ranks lexical hits with the dense ranking when it can; else it cuts them to limit.
func (c *Catalog) fuse(query string, limit int, lexical []search.Hit, entries []*Entry, vecs *atomic.Pointer[[][]float32], keep func(int) bool) []Hit {
	var dv *[][]float32
	if c.dense != nil {
		dv = vecs.Load()
	}
	if dv == nil || strings.TrimSpace(query) == "" {
		return hitsOf(lexical[:min(limit, len(lexical))], entries)
	}
	q, err := c.dense.client.EmbedQuery(context.Background(), query)
	if err != nil {
		c.dense.warn("the query could not be embedded: this search is lexical", err)
		return hitsOf(lexical[:min(limit, len(lexical))], entries)
	}
	lex := make([]int, len(lexical))
	why := map[int]string{}
	for i, h := range lexical {
		lex[i] = h.Doc
		why[h.Doc] = h.Why(entries[h.Doc].Tool.Owner)
	}
	den := embed.Rank(*dv, q, fusionDepth, keep)
	fused := embed.Fuse(limit, lex, den)
	out := make([]Hit, len(fused))
	for i, p := range fused {
		w, ok := why[p]
		if !ok {
			w = "similar in meaning (embeddings)"
		}
		out[i] = Hit{Entry: entries[p], Why: w}
	}
	return out
}
