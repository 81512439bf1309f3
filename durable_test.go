package codemode

import (
	"context"
	"strings"
	"testing"

	"github.com/codemode-go/codemode/config"
)

// TestDurableResume runs every suspend/resume test again on a shared run store (the in-process
// one: the semantics are the store's, not Redis's), hot and cold (issue 15).
func TestDurableResume(t *testing.T) {
	durableMode = true
	defer func() { durableMode = false }()
	for _, cold := range []bool{false, true} {
		name := "hot"
		if cold {
			name = "cold"
		}
		t.Run(name, func(t *testing.T) {
			coldMode = cold
			defer func() { coldMode = false }()
			for name, f := range suspendResumeTests() {
				t.Run(name, f)
			}
		})
	}
}

func TestOpenRunStore(t *testing.T) { // W8: the library opens the configured store itself
	cfg := config.Default()
	if st, err := OpenRunStore(context.Background(), cfg, nil); st != nil || err != nil {
		t.Fatalf("no runStore configured: %v, %v", st, err)
	}
	cfg.RunStore.Redis = &config.RedisStore{URL: "redis://127.0.0.1:1/0", KeyEnv: "CODEMODE_TEST_NO_SUCH_KEY"}
	t.Setenv("CODEMODE_TEST_NO_SUCH_KEY", "")
	if _, err := OpenRunStore(context.Background(), cfg, nil); err == nil || !strings.Contains(err.Error(), "CODEMODE_TEST_NO_SUCH_KEY") {
		t.Fatalf("missing key: %v", err)
	}
	t.Setenv("CODEMODE_TEST_NO_SUCH_KEY", strings.Repeat("ab", 32))
	st, err := OpenRunStore(context.Background(), cfg, nil) // unreachable: not an error
	if err != nil || st == nil {
		t.Fatalf("unreachable Redis: %v, %v", st, err)
	}
	st.Close()
}
