package schemahint

import "testing"

func catalogSchemas(b *testing.B) (in, out []*Schema) {
	b.Helper()
	for _, s := range catalogServers(b) {
		for _, t := range s.Tools {
			in = append(in, t.Input)
			if t.Output != nil {
				out = append(out, t.Output)
			}
		}
	}
	return in, out
}

// BenchmarkInputHintCatalog renders the input hint of all 667 catalog tools per op.
func BenchmarkInputHintCatalog(b *testing.B) {
	in, _ := catalogSchemas(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range in {
			InputHint(s, DefaultHintLen)
		}
	}
}

// BenchmarkOutputHintCatalog renders the 255 declared outputs per op.
func BenchmarkOutputHintCatalog(b *testing.B) {
	_, out := catalogSchemas(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range out {
			OutputHint(s, DefaultHintLen)
		}
	}
}

// BenchmarkRenderServerDTSLinear renders mcp/linear.d.ts (198 tools).
func BenchmarkRenderServerDTSLinear(b *testing.B) {
	s := serverByName(b, "linear")
	b.ReportAllocs()
	for b.Loop() {
		RenderServerDTS(s, DTSOptions{})
	}
}

func BenchmarkRenderIndexDTS(b *testing.B) {
	servers := catalogServers(b)
	b.ReportAllocs()
	for b.Loop() {
		RenderIndexDTS(servers, DTSOptions{})
	}
}

func BenchmarkRenderToolDTS(b *testing.B) {
	s := serverByName(b, "firecrawl")
	b.ReportAllocs()
	for b.Loop() {
		for _, t := range s.Tools {
			RenderToolDTS(s, t, DTSOptions{})
		}
	}
}

// BenchmarkParseCatalog parses the 667 input schemas per op.
func BenchmarkParseCatalog(b *testing.B) {
	cat := loadCatalog(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, c := range cat {
			if _, err := Parse(c.InputSchema); err != nil {
				b.Fatal(err)
			}
		}
	}
}
