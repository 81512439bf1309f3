package progress

import (
	"context"
	"testing"
)

func TestSinkInContext(t *testing.T) {
	ctx := context.Background()
	if From(ctx) != nil || From(With(ctx, nil)) != nil {
		t.Fatal("a sink out of nowhere")
	}
	var got float64
	s := From(With(ctx, func(p, _ float64, _ string) { got = p }))
	if s == nil {
		t.Fatal("no sink")
	}
	s(3, 10, "x")
	if got != 3 {
		t.Fatal(got)
	}
}
