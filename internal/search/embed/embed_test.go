package embed

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/codemode-go/codemode/internal/search/embed/embedtest"
)

func client(t *testing.T, s *embedtest.StandIn, dir string) *Client {
	c, err := New(Config{URL: s.URL + "/v1", Model: "stand-in", QueryTimeout: 2 * time.Second, CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEmbedAndCache(t *testing.T) {
	s := embedtest.NewStandIn(t)
	dir := t.TempDir()
	c := client(t, s, dir)
	texts := []string{"create a refund", "weather forecast", "list files"}
	a, err := c.Embed(context.Background(), append([]string(nil), texts...))
	if err != nil || len(a) != 3 {
		t.Fatal(err)
	}
	if n := s.Requests.Load(); n != 1 {
		t.Fatalf("%d requests for one batch", n)
	}
	// A second client over the same cache directory makes no request.
	b, err := client(t, s, dir).Embed(context.Background(), append([]string(nil), texts...))
	if err != nil || !reflect.DeepEqual(a, b) || s.Requests.Load() != 1 {
		t.Fatalf("cache: %v, %d requests", err, s.Requests.Load())
	}
	// Another model does not share it.
	c2, _ := New(Config{URL: s.URL + "/v1", Model: "other", CacheDir: dir})
	c2.Embed(context.Background(), []string{"create a refund"})
	if s.Requests.Load() != 2 {
		t.Fatal("the cache is not keyed by model")
	}
	q, err := c.EmbedQuery(context.Background(), "reimburse the customer")
	if err != nil {
		t.Fatal(err)
	}
	if got := Rank(a, q, 3, nil); got[0] != 0 {
		t.Errorf("Rank = %v, want the refund text first", got)
	}
}

// A hostile or broken endpoint is an error, never a panic or an unbounded allocation.
func TestEmbedRefusesBadAnswers(t *testing.T) {
	for name, body := range map[string]string{
		"not json":    "<html>",
		"wrong count": `{"data":[]}`,
		"bad index":   `{"data":[{"index":5,"embedding":[1]}]}`,
		"repeated":    `{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}`,
		"zeros":       `{"data":[{"index":0,"embedding":[0,0]}]}`,
		"empty":       `{"data":[{"index":0,"embedding":[]}]}`,
		"huge dims":   `{"data":[{"index":0,"embedding":[` + strings.Repeat("1,", MaxDims) + `1]}]}`,
	} {
		s := embedtest.NewStandIn(t)
		s.Body = body
		if _, err := client(t, s, "").EmbedQuery(context.Background(), "x"); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	s := embedtest.NewStandIn(t)
	s.Status = http.StatusInternalServerError
	if _, err := client(t, s, "").EmbedQuery(context.Background(), "x"); err == nil || !strings.Contains(err.Error(), "500") {
		t.Errorf("500: %v", err)
	}
	s = embedtest.NewStandIn(t)
	s.Delay = time.Second
	c, _ := New(Config{URL: s.URL + "/v1", Model: "m", QueryTimeout: 50 * time.Millisecond})
	start := time.Now()
	if _, err := c.EmbedQuery(context.Background(), "x"); err == nil {
		t.Error("slow endpoint: no timeout")
	}
	if time.Since(start) > 4*time.Second {
		t.Error("the query timeout did not bound the call")
	}
	for _, cfg := range []Config{{URL: "ftp://x", Model: "m"}, {URL: "http://x"}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
}

func TestFuse(t *testing.T) {
	if got := Fuse(3, []int{1, 2, 3}, []int{3, 4}); !reflect.DeepEqual(got, []int{3, 1, 2}) {
		t.Errorf("Fuse = %v", got)
	}
	if got := Fuse(5, []int{7}, nil); !reflect.DeepEqual(got, []int{7}) {
		t.Errorf("Fuse one ranking = %v", got)
	}
}
