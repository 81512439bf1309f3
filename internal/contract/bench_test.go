package contract

import "testing"

// BenchmarkValidateInput is the per-call cost input validation adds to a nested call.
func BenchmarkValidateInput(b *testing.B) {
	s := CompileInput("native:p:t", []byte(`{"type":"object","properties":{"id":{"type":"string"},"limit":{"type":"integer","minimum":1}},"required":["id"]}`))
	in := []byte(`{"id":"x"}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := s.ValidateInput(in); err != nil {
			b.Fatal(err)
		}
	}
}
