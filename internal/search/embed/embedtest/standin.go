// Package embedtest is a stand-in OpenAI-compatible embeddings server for tests (issue 23 item 4):
// no model, no network beyond loopback.
package embedtest

import (
	"encoding/json"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// StandIn is a stand-in embeddings server (issue 23 item 4: tests never need a model): a text's
// vector counts its words' "meanings" in 64 hashed dimensions, where Meanings maps a word to a
// shared meaning (so "reimburse" and "refund" embed alike, as a real model would).
type StandIn struct {
	*httptest.Server
	Requests atomic.Int32
	Delay    time.Duration
	Status   int
	Body     string // when set, the answer as is
}

// Meanings are the stand-in's synonyms.
var Meanings = map[string]string{"reimburse": "refund", "moneyback": "refund", "money": "refund", "repay": "refund", "forecast": "weather", "rain": "weather"}

// NewStandIn starts one, closed when the test ends.
func NewStandIn(t testing.TB) *StandIn {
	s := &StandIn{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.Requests.Add(1)
		if s.Delay > 0 {
			select {
			case <-time.After(s.Delay):
			case <-r.Context().Done():
				return
			}
		}
		if r.URL.Path != "/v1/embeddings" {
			http.NotFound(w, r)
			return
		}
		if s.Status != 0 {
			w.WriteHeader(s.Status)
			return
		}
		if s.Body != "" {
			w.Write([]byte(s.Body))
			return
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		type item struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		}
		var data []item
		for i, text := range req.Input {
			data = append(data, item{i, vector(text)})
		}
		json.NewEncoder(w).Encode(map[string]any{"data": data, "model": req.Model})
	}))
	t.Cleanup(s.Close)
	return s
}

func vector(text string) []float64 {
	v := make([]float64, 64)
	v[63] = 0.01 // never all zeros
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !(r >= 'a' && r <= 'z') }) {
		if m, ok := Meanings[w]; ok {
			w = m
		}
		h := fnv.New32a()
		h.Write([]byte(w))
		v[h.Sum32()%63]++
	}
	return v
}
