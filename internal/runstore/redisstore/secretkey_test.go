package redisstore

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
)

func TestParseKey(t *testing.T) {
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i + 1)
	}
	cases := []struct {
		name, in string
		ok       bool
	}{
		{"hex", hex.EncodeToString(key), true},
		{"hex upper case with newline", strings.ToUpper(hex.EncodeToString(key)) + "\n", true},
		{"base64", base64.StdEncoding.EncodeToString(key), true},
		{"base64 raw url", base64.RawURLEncoding.EncodeToString(key), true},
		{"empty", "", false},
		{"short hex", hex.EncodeToString(key[:16]), false},
		{"long base64", base64.StdEncoding.EncodeToString(append(key, 1)), false},
		{"not a key", "correct horse battery staple", false},
		{"all zeros", strings.Repeat("0", 64), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k, err := ParseKey(c.in)
			if (err == nil) != c.ok {
				t.Fatalf("ParseKey: %v", err)
			}
			if c.ok && string(k[:]) != string(key) {
				t.Fatal("wrong key")
			}
			if err != nil && c.in != "" && strings.Contains(err.Error(), strings.TrimSpace(c.in)) {
				t.Fatalf("the error echoes the key: %v", err)
			}
		})
	}
}

func TestKeyFromEnv(t *testing.T) {
	secret := "not-a-valid-key-but-still-secret"
	t.Setenv("CODEMODE_TEST_BAD_KEY", secret)
	t.Setenv("CODEMODE_TEST_GOOD_KEY", strings.Repeat("ab", 32))
	if _, err := KeyFromEnv("CODEMODE_TEST_GOOD_KEY"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", "CODEMODE_TEST_UNSET_KEY", "CODEMODE_TEST_BAD_KEY"} {
		_, err := KeyFromEnv(name)
		if err == nil || !strings.Contains(err.Error(), "runStore.redis.keyEnv") || (name != "" && !strings.Contains(err.Error(), name)) {
			t.Fatalf("KeyFromEnv(%q): %v", name, err)
		}
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("the error echoes the variable's value: %v", err)
		}
	}
}
