#!/usr/bin/env bash
# Install the pinned MCP Inspector (its --cli is a real one-shot client: a new session per call,
# no DELETE) into .cache/inspector for the gateway's end-to-end tests. It runs on the machine's
# Node (20+). Tests that need it skip when it is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=.cache/inspector
want="@modelcontextprotocol/inspector@0.15.0"
stamp="$dir/.installed"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "npm not found: the Inspector end-to-end test will be skipped" >&2
  exit 0
fi
mkdir -p "$dir"
[ -f "$dir/package.json" ] || echo '{"name":"codemode-inspector","private":true}' > "$dir/package.json"
(cd "$dir" && npm install --no-audit --no-fund --loglevel=error --save-exact "$want")
printf '%s' "$want" > "$stamp"
