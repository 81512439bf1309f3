package runstore_test

import (
	"testing"

	"github.com/codemode-go/codemode/internal/runstore"
	"github.com/codemode-go/codemode/internal/runstore/durabletest"
)

// The in-process Durable passes the same conformance suite as the Redis store.
func TestMemDurableConformance(t *testing.T) {
	durabletest.Run(t, func(t *testing.T, lim runstore.Limits) (a, b runstore.Durable) {
		s := runstore.NewMemDurable(lim)
		t.Cleanup(func() { _ = s.Close() })
		return s, s
	})
}
