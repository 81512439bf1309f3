package codemode

import "testing"

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
