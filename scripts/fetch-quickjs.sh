#!/usr/bin/env bash
# Fetch the pinned quickjs-wasi npm package with the ordinary npm client, verify the tarball against
# the integrity hash pinned in internal/quickjs/assets/quickjs-wasi.json (the registry's own
# dist.integrity for that version), extract quickjs.wasm next to it and check it against the pinned
# wasmSha256 (the hash the Go fetcher in internal/quickjs/enginefetch checks too). Nothing here is
# committed. It needs only node and npm (deploy/Containerfile runs it before Go is there).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=SCRIPTDIR/lib/fetch-pinned.sh
. scripts/lib/fetch-pinned.sh
assets=internal/quickjs/assets

derive() {
  tar -xzf "$1" -C "$3" package/quickjs.wasm package/LICENSE
  local actualsha
  actualsha=$(sha_of sha256 hex "$3/package/quickjs.wasm")
  if [ "$actualsha" != "$pinsha" ]; then
    echo "package/quickjs.wasm of $pkg@$version has sha256 $actualsha, the pin says wasmSha256 $pinsha" >&2
    exit 1
  fi
  cp "$3/package/quickjs.wasm" "$2"
  cp "$3/package/LICENSE" "$assets/LICENSE.quickjs-wasi"
}
fetch_pinned "$assets" quickjs-wasi.json wasmSha256 quickjs.wasm derive
