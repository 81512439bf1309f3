#!/usr/bin/env bash
# Install nginx from Debian's packages when it is missing: TestGatewayAffinityNginx runs the
# documented affinity recipe (examples/nginx-affinity.conf) in front of two replicas. Without
# root (or apt) the install is skipped and that test skips, saying why.
set -euo pipefail
if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "nginx not found and cannot apt-get it: the nginx affinity test will skip (apt-get install nginx)" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# The package's service is not wanted (the test runs its own nginx).
policy=/usr/sbin/policy-rc.d
made_policy=
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && made_policy=1
fi
trap '[ -n "$made_policy" ] && rm -f "$policy"' EXIT
apt-get install -y -q --no-install-recommends nginx
