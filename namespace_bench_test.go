package codemode

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/codemode-go/codemode/api"
)

// A namespace call's overhead over the same call through tools.callValue (issue 12, target ≤ 5 µs
// per call): 100 sequential calls of the same plugin tool each way; compare the two ns/op.
func BenchmarkNamespace100(b *testing.B) {
	benchNamespace(b, `for (let i = 0; i < 100; i++) await Issues.list({state: "open"}); return 1`)
}

func BenchmarkNamespaceCallValue100(b *testing.B) {
	benchNamespace(b, `for (let i = 0; i < 100; i++) await tools.callValue("native:github:github_list_issues", {state: "open"}); return 1`)
}

func benchNamespace(b *testing.B, code string) {
	var calls atomic.Int64
	rt := newRuntime(b, testConfig(b))
	if err := rt.AddPlugin(context.Background(), issuesPlugin(&calls, nil)); err != nil {
		b.Fatal(err)
	}
	s := rt.Activate(api.RunContext{SessionKey: "bench"}, nil)
	in, _ := json.Marshal(map[string]string{"code": code})
	if r := execRaw(s, "warm", in); r.Status != api.StatusCompleted {
		b.Fatalf("%+v", r)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r := execRaw(s, "b", in); r.Status != api.StatusCompleted {
			b.Fatalf("%+v", r)
		}
	}
}
