#!/usr/bin/env bash
# Install redis-server from Debian's packages when it is missing: the run-store tests start a
# private, throwaway instance of it (internal/testtools/redistest). Without root (or apt) the
# install is skipped and those tests skip, saying why.
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib/apt-install.sh
. "$(dirname "$0")/lib/apt-install.sh"
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
apt_install redis-server
