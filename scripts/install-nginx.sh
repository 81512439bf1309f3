#!/usr/bin/env bash
# Install nginx from Debian's packages when it is missing: TestGatewayAffinityNginx runs the
# documented affinity recipe (examples/nginx-affinity.conf) in front of two replicas. Without
# root (or apt) the install is skipped and that test skips, saying why.
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib/apt-install.sh
. "$(dirname "$0")/lib/apt-install.sh"
if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then
  exit 0
fi
if ! can_apt; then
  echo "nginx not found and cannot apt-get it: the nginx affinity test will skip (apt-get install nginx)" >&2
  exit 0
fi
apt_install nginx
