package codemode

import (
	"os"
	"strings"
	"testing"
)

// The README's library section shows the embedding ExampleSurface_Handle runs, line for line
// (issue 13): a snippet a reader copies must be one `go test` keeps working.
func TestREADMEEmbeddingIsTheExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	if i := strings.Index(section, "## The library"); i >= 0 {
		section = section[i:]
	} else {
		t.Fatal(`README.md has no "## The library" section`)
	}
	start := strings.Index(section, "```go\n")
	if start < 0 {
		t.Fatal("the library section has no Go snippet")
	}
	snippet := section[start+len("```go\n"):]
	snippet = snippet[:strings.Index(snippet, "```")]

	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	body := string(src)
	i := strings.Index(body, "func ExampleSurface_Handle() {\n")
	if i < 0 {
		t.Fatal("example_test.go has no ExampleSurface_Handle")
	}
	body = body[i+len("func ExampleSurface_Handle() {\n"):]
	body = body[:strings.Index(body, "\n}\n")+1]
	var lines []string
	for _, l := range strings.SplitAfter(body, "\n") {
		lines = append(lines, strings.TrimPrefix(l, "\t"))
	}
	if example := strings.Join(lines, ""); example != snippet {
		t.Fatalf("the README's embedding differs from ExampleSurface_Handle:\nREADME:\n%s\nexample:\n%s", snippet, example)
	}
}
