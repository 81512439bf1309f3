// Package enginefetch obtains pinned npm artifacts at run time, for binaries and libraries built
// without them (`go install`, `go get`): the QuickJS WebAssembly module, and (Options.Artifact)
// anything derived deterministically from a pinned tarball, such as the search package's WordNet
// index. It downloads the pinned npm tarball with net/http, checks the pinned sha512 integrity of
// the whole tarball before reading any of it, takes out the members it needs (package/quickjs.wasm
// by default), checks the pinned sha256 of what it produces and caches that under the user cache
// directory. A cached copy is hashed again on every use, so a cache hit costs one sha256 and a
// tampered file is never used.
//
// Nothing here trusts the network, the registry, the tarball or the cache directory: the two
// pinned hashes are the only authority, and every size is bounded.
package enginefetch

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
)

// Pin names the npm package version the module comes from and the two hashes that make it
// trustworthy. It is the content of internal/quickjs/assets/quickjs-wasi.json.
type Pin struct {
	Package string `json:"package"`
	Version string `json:"version"`
	// Integrity is the registry's dist.integrity of the tarball: "sha512-" and the base64 digest.
	Integrity string `json:"integrity"`
	// WasmSHA256 is the hex sha256 of package/quickjs.wasm inside that tarball. It lets a cache
	// hit be verified without the tarball.
	WasmSHA256 string `json:"wasmSha256"`
}

var (
	// npm's package-name rules (lower case, optional scope), narrowed to what is safe in a URL
	// path and a directory name.
	pkgName = regexp.MustCompile(`^(@[a-z0-9-][a-z0-9._-]*/)?[a-z0-9-][a-z0-9._-]*$`)
	semver  = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
)

// String is "package@version".
func (p Pin) String() string { return p.Package + "@" + p.Version }

// digests checks the pin and decodes its two hashes.
func (p Pin) digests() (tarball [sha512.Size]byte, wasm [sha256.Size]byte, err error) {
	if !pkgName.MatchString(p.Package) || len(p.Package) > 214 {
		return tarball, wasm, fmt.Errorf("pin: invalid package name %q", p.Package)
	}
	if !semver.MatchString(p.Version) || len(p.Version) > 64 {
		return tarball, wasm, fmt.Errorf("pin: invalid version %q", p.Version)
	}
	b64, ok := strings.CutPrefix(p.Integrity, "sha512-")
	if !ok {
		return tarball, wasm, fmt.Errorf("pin: integrity must be a single sha512-… hash, got %q", p.Integrity)
	}
	d, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(d) != sha512.Size {
		return tarball, wasm, fmt.Errorf("pin: integrity %q is not a base64 sha512 digest", p.Integrity)
	}
	copy(tarball[:], d)
	h, err := hex.DecodeString(p.WasmSHA256)
	if err != nil || len(h) != sha256.Size {
		return tarball, wasm, fmt.Errorf("pin: wasmSha256 %q is not a hex sha256 digest", p.WasmSHA256)
	}
	copy(wasm[:], h)
	return tarball, wasm, nil
}

// cacheName is the pin's directory under the cache root: "quickjs-wasi-3.7.0" (a scope becomes
// "scope+name-…", so two pins never share a directory).
func (p Pin) cacheName() string {
	return strings.ReplaceAll(strings.TrimPrefix(p.Package, "@"), "/", "+") + "-" + p.Version
}

// tarballURL is where npm registries serve a version's tarball:
// <registry>/<package>/-/<unscoped name>-<version>.tgz.
func (p Pin) tarballURL(registry string) (*url.URL, error) {
	u, err := parseRegistry(registry)
	if err != nil {
		return nil, err
	}
	return u.JoinPath(p.Package, "-", path.Base(p.Package)+"-"+p.Version+".tgz"), nil
}

func parseRegistry(s string) (*url.URL, error) {
	// The URL may carry credentials: errors never echo it.
	u, err := url.Parse(s)
	if err != nil {
		return nil, errors.New("npm registry is not a valid URL")
	}
	if u.Scheme != "https" && u.Scheme != "http" || u.Host == "" {
		return nil, errors.New("npm registry must be an http(s) URL such as https://registry.npmjs.org/")
	}
	u.RawQuery, u.Fragment = "", ""
	return u, nil
}
