package httpauth

import "testing"

func TestCheckToken(t *testing.T) {
	for tok, ok := range map[string]bool{"0123456789abcdef": true, "short": false, "0123456789 abcdef": false, "0123456789abcdé€": false} {
		if got := CheckToken(tok) == ""; got != ok {
			t.Errorf("CheckToken(%q) ok=%v, want %v", tok, got, ok)
		}
	}
}
