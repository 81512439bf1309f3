package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSecretResolve(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Setenv("CODEMODE_TEST_SECRET", "s3cret-value")
	t.Setenv("CODEMODE_TEST_EMPTY", "")
	for _, tc := range []struct {
		name    string
		s       Secret
		want    string
		wantErr string
	}{
		{"env", Secret{Env: "CODEMODE_TEST_SECRET"}, "s3cret-value", ""},
		{"env unset", Secret{Env: "CODEMODE_TEST_NOT_SET_ANYWHERE"}, "", "CODEMODE_TEST_NOT_SET_ANYWHERE is not set"},
		{"env empty", Secret{Env: "CODEMODE_TEST_EMPTY"}, "", "is not set"},
		{"file newline", Secret{File: write("a", "tok\n")}, "tok", ""},
		{"file crlf", Secret{File: write("b", "tok\r\n")}, "tok", ""},
		{"file inner newline kept", Secret{File: write("c", "a\nb\n")}, "a\nb", ""},
		{"file empty", Secret{File: write("d", "\n")}, "", "is empty"},
		{"file missing", Secret{File: filepath.Join(dir, "nope")}, "", "no such file"},
		{"file too large", Secret{File: write("e", strings.Repeat("x", maxSecretBytes+1))}, "", "larger than"},
		{"none", Secret{}, "", "no secret source"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.s.Resolve()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("error leaks the value: %v", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if s := (Secret{Env: "X"}).String(); s != "$X" {
		t.Errorf("String() = %q", s)
	}
}

func TestSecretDecode(t *testing.T) {
	for _, tc := range []struct {
		src, wantErr string
		want         Secret
	}{
		{`{env: "TOKEN_A"}`, "", Secret{Env: "TOKEN_A"}},
		{`{file: "/run/secrets/a"}`, "", Secret{File: "/run/secrets/a"}},
		{`{env: "A", file: "/x"}`, "either env or file", Secret{}},
		{`{}`, "never goes in the file", Secret{}},
		{`{env: "1BAD"}`, "invalid environment variable name", Secret{}},
		{`{file: "rel/path"}`, "absolute path", Secret{}},
		{`{value: "inline"}`, "unknown", Secret{}},
		{`"inline"`, "object", Secret{}},
	} {
		d := &decoder{data: []byte(tc.src)}
		root, err := unmarshal(d.data)
		if err != nil {
			t.Fatal(err)
		}
		d.idx = buildIndex(d.data)
		var got Secret
		d.secret(path{"s"}, root, &got)
		if tc.wantErr == "" {
			if len(d.errs) > 0 || got != tc.want {
				t.Errorf("%s: got %+v, errs %v", tc.src, got, d.errs)
			}
			continue
		}
		if len(d.errs) == 0 || !strings.Contains(strings.ToLower(d.errs.Error()), strings.ToLower(tc.wantErr)) {
			t.Errorf("%s: errs %v, want %q", tc.src, d.errs, tc.wantErr)
		}
	}
}
