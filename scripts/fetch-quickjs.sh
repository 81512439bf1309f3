#!/usr/bin/env bash
# Fetch the pinned quickjs-wasi npm package with the ordinary npm client, verify the tarball against
# the integrity hash pinned in internal/quickjs/assets/quickjs-wasi.json (the registry's own
# dist.integrity for that version), extract quickjs.wasm next to it and check it against the pinned
# wasmSha256 (the hash the Go fetcher in internal/quickjs/enginefetch checks too). Nothing here is
# committed.
set -euo pipefail
cd "$(dirname "$0")/.."
assets=internal/quickjs/assets
pin="$assets/quickjs-wasi.json"
read -r pkg version integrity wasmsha < <(node -e '
  const p = require("./'"$pin"'");
  console.log(p.package, p.version, p.integrity, p.wasmSha256);')
out="$assets/quickjs.wasm"
stamp="$assets/.quickjs.wasm.integrity"
if [ -f "$out" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$integrity $wasmsha" ]; then
  touch "$out" # up to date with the pin file, for make
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetching $pkg@$version from the npm registry" >&2
(cd "$tmp" && npm pack --silent "$pkg@$version" >/dev/null)
tgz="$tmp/$pkg-$version.tgz"
actual=$(node -e '
  const c = require("crypto"), fs = require("fs");
  console.log("sha512-" + c.createHash("sha512").update(fs.readFileSync(process.argv[1])).digest("base64"));' "$tgz")
if [ "$actual" != "$integrity" ]; then
  echo "integrity mismatch for $pkg@$version: got $actual, want $integrity" >&2
  exit 1
fi
tar -xzf "$tgz" -C "$tmp" package/quickjs.wasm package/LICENSE
actualsha=$(node -e '
  const c = require("crypto"), fs = require("fs");
  console.log(c.createHash("sha256").update(fs.readFileSync(process.argv[1])).digest("hex"));' "$tmp/package/quickjs.wasm")
if [ "$actualsha" != "$wasmsha" ]; then
  echo "package/quickjs.wasm of $pkg@$version has sha256 $actualsha, the pin says wasmSha256 $wasmsha" >&2
  exit 1
fi
cp "$tmp/package/quickjs.wasm" "$out.tmp"
cp "$tmp/package/LICENSE" "$assets/LICENSE.quickjs-wasi"
mv "$out.tmp" "$out"
printf '%s %s' "$integrity" "$wasmsha" > "$stamp"
echo "verified $pkg@$version ($integrity) -> $out" >&2
