#!/usr/bin/env bash
# Install haproxy from Debian's packages when it is missing: the fleet test (internal/fleettest)
# puts a real haproxy in front of three `codemode serve --http` replicas, and
# TestGatewayAffinityHaproxy runs examples/haproxy-affinity.cfg. Without root (or apt)
# the install is skipped and that test skips, saying why.
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib/apt-install.sh
. "$(dirname "$0")/lib/apt-install.sh"
if command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ]; then
  exit 0
fi
if ! can_apt; then
  echo "haproxy not found and cannot install it here: the fleet test will skip (apt-get install haproxy)" >&2
  exit 0
fi
# Debian 12's haproxy 2.6 (the version the fleet test and docs/operations.md's recipe were checked with).
apt_install haproxy
