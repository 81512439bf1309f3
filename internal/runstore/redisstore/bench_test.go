package redisstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/codemode-go/codemode/internal/runstore"
	"github.com/codemode-go/codemode/internal/runstore/durabletest"
	"github.com/codemode-go/codemode/internal/testtools/redistest"
)

// 60 KB is a typical compressed snapshot diff plus its state.
const benchRecordBytes = 60 << 10

var benchLimits = runstore.Limits{Runs: 1 << 20, SessionRuns: 1 << 20, Bytes: 1 << 40, SessionBytes: 1 << 40}

// BenchmarkPut stores a 60 KB record over loopback: sealing plus one script. Ids cycle over 256
// runs (one per session), so after the first round each Put replaces a record, as a
// re-suspended run does, and the instance's memory stays bounded.
func BenchmarkPut(b *testing.B) {
	srv := redistest.Shared(b)
	s := open(b, srv, testPrefix(), testKey, benchLimits, 0)
	ids, recs := benchRuns(256)
	b.SetBytes(benchRecordBytes)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := s.Put(b.Context(), ids[i%len(ids)], recs[i%len(ids)], time.Minute); err != nil {
			b.Fatal(err)
		}
	}
	report(b)
}

// BenchmarkAcquireRelease is one wait's worth of store traffic: take the run (60 KB back,
// opened), put the updated 60 KB record back and drop the lease.
func BenchmarkAcquireRelease(b *testing.B) {
	srv := redistest.Shared(b)
	s := open(b, srv, testPrefix(), testKey, benchLimits, 0)
	ids, recs := benchRuns(16)
	for i, id := range ids {
		if err := s.Put(b.Context(), id, recs[i], time.Minute); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(2 * benchRecordBytes)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		n := i % len(ids)
		rec, l, err := s.Acquire(b.Context(), ids[n], recs[n].Scope, "bench", time.Minute, "")
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Release(b.Context(), l, &rec, nil, time.Minute); err != nil {
			b.Fatal(err)
		}
	}
	report(b)
}

func benchRuns(n int) ([]string, []runstore.Record) {
	ids := make([]string, n)
	recs := make([]runstore.Record, n)
	for i := range ids {
		ids[i] = runstore.NewID()
		sc := durabletest.Scope
		sc.SessionKey = fmt.Sprint("bench-session-", i)
		recs[i] = durabletest.NewRecord(sc, benchRecordBytes, byte(i))
	}
	return ids, recs
}

func report(b *testing.B) {
	if b.N > 0 {
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/op")
	}
}
