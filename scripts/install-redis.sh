#!/usr/bin/env bash
# Install redis-server from Debian's packages when it is missing: the run-store tests start a
# private, throwaway instance of it (internal/testtools/redistest). Without root (or apt) the
# install is skipped and those tests skip, saying why.
set -euo pipefail
if command -v redis-server >/dev/null 2>&1 || [ -x /usr/bin/redis-server ] || [ -x /usr/sbin/redis-server ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "redis-server not found and not root: skipping its install; the Redis run-store tests will skip (apt-get install redis-server)" >&2
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "redis-server not found and no apt-get: install redis-server yourself; the Redis run-store tests will skip" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# The package's service is not wanted (the tests run their own instance): keep invoke-rc.d from
# starting it where policy-rc.d is honoured.
policy=/usr/sbin/policy-rc.d
made_policy=
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && made_policy=1
fi
trap '[ -n "$made_policy" ] && rm -f "$policy"' EXIT
apt-get install -y -q --no-install-recommends redis-server
