package redisstore

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
)

// ParseKey reads a 32-byte key written as 64 hex digits or as base64 (standard or URL
// alphabet, padded or not). Errors never echo the key.
func ParseKey(s string) ([32]byte, error) {
	var k [32]byte
	s = strings.TrimSpace(s)
	if s == "" {
		return k, errors.New("the key is empty")
	}
	var raw []byte
	if len(s) == 64 {
		if b, err := hex.DecodeString(s); err == nil {
			raw = b
		}
	}
	if raw == nil {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if b, err := enc.DecodeString(s); err == nil {
				raw = b
				break
			}
		}
	}
	if raw == nil {
		return k, fmt.Errorf("the key is neither 64 hex digits nor base64 (%d characters)", len(s))
	}
	if len(raw) != 32 {
		return k, fmt.Errorf("the key must be 32 bytes, got %d (generate one with `openssl rand -hex 32`)", len(raw))
	}
	copy(k[:], raw)
	if k == ([32]byte{}) {
		return k, errors.New("the key is all zeros")
	}
	return k, nil
}

// KeyFromEnv reads the key from the environment variable name (the configuration's
// runStore.redis.keyEnv). Errors name the variable, never its value.
func KeyFromEnv(name string) ([32]byte, error) {
	if name == "" {
		return [32]byte{}, errors.New("runStore.redis.keyEnv: name the environment variable that holds the run store key")
	}
	v, ok := os.LookupEnv(name)
	if !ok {
		return [32]byte{}, fmt.Errorf("runStore.redis.keyEnv: environment variable %s is not set (it must hold a 32-byte key: `openssl rand -hex 32`)", name)
	}
	k, err := ParseKey(v)
	if err != nil {
		return [32]byte{}, fmt.Errorf("runStore.redis.keyEnv: environment variable %s: %v", name, err)
	}
	return k, nil
}
