package config

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// Secret is a credential the configuration names but does not hold, so that a configuration
// file can be committed, shared and logged: `{env: "NAME"}` reads an environment variable,
// `{file: "/run/secrets/name"}` a file (a container or Kubernetes secret; one trailing newline
// is removed). It is resolved when the process starts (Resolve), never written back.
type Secret struct {
	// Env names the environment variable that holds the value.
	Env string
	// File is the path of a file that holds the value.
	File string
}

// IsZero reports whether the secret names no source.
func (s Secret) IsZero() bool { return s.Env == "" && s.File == "" }

// String says where the secret comes from, never what it is.
func (s Secret) String() string {
	switch {
	case s.Env != "":
		return "$" + s.Env
	case s.File != "":
		return "file " + s.File
	}
	return "(none)"
}

// maxSecretBytes bounds a secret file: a key, token or password, not a document.
const maxSecretBytes = 64 << 10

// Resolve reads the secret. An unset or empty variable, a missing or empty file, or a file
// larger than 64 KiB is an error that names the source (never the value).
func (s Secret) Resolve() (string, error) {
	switch {
	case s.Env != "":
		v, ok := os.LookupEnv(s.Env)
		if !ok || v == "" {
			return "", fmt.Errorf("environment variable %s is not set", s.Env)
		}
		return v, nil
	case s.File != "":
		f, err := os.Open(s.File)
		if err != nil {
			return "", fmt.Errorf("secret file: %w", err)
		}
		defer f.Close()
		buf := make([]byte, maxSecretBytes+1)
		n, _ := f.Read(buf)
		for n < len(buf) {
			m, err := f.Read(buf[n:])
			n += m
			if err != nil || m == 0 {
				break
			}
		}
		if n > maxSecretBytes {
			return "", fmt.Errorf("secret file %s is larger than %d bytes", s.File, maxSecretBytes)
		}
		v := bytes.TrimSuffix(bytes.TrimSuffix(buf[:n], []byte("\n")), []byte("\r"))
		if len(v) == 0 {
			return "", fmt.Errorf("secret file %s is empty", s.File)
		}
		return string(v), nil
	}
	return "", fmt.Errorf("no secret source configured")
}

// secret decodes a Secret at p: an object with exactly one of env and file.
func (d *decoder) secret(p path, v any, out *Secret) bool {
	m, ok := d.object(p, v, "env", "file")
	if !ok {
		return false
	}
	var s Secret
	d.setString(p, m, "env", &s.Env)
	d.setString(p, m, "file", &s.File)
	switch {
	case s.Env != "" && s.File != "":
		d.errorf(p, "give either env or file, not both")
		return false
	case s.Env == "" && s.File == "":
		d.errorf(p, `expected {env: "VARIABLE"} or {file: "/path/to/secret"}: a secret's value never goes in the file`)
		return false
	case s.Env != "" && !envNameRE.MatchString(s.Env):
		d.errorf(p.key("env"), "invalid environment variable name %q", s.Env)
		return false
	case s.File != "" && !filepath.IsAbs(s.File):
		d.errorf(p.key("file"), "a secret file must be an absolute path, got %q", s.File)
		return false
	}
	*out = s
	return true
}
