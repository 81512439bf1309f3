#!/usr/bin/env bash
# Install haproxy from Debian's packages when it is missing: the fleet test (internal/fleettest)
# puts a real haproxy in front of three `codemode serve --http` replicas, and
# TestGatewayAffinityHaproxy runs examples/haproxy-affinity.cfg. Without root (or apt)
# the install is skipped and that test skips, saying why.
set -euo pipefail
if command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "haproxy not found and cannot install it here: the fleet test will skip (apt-get install haproxy)" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# The package's service is not wanted (the test runs its own instance).
policy=/usr/sbin/policy-rc.d
made_policy=
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && made_policy=1
fi
trap '[ -n "$made_policy" ] && rm -f "$policy"' EXIT
# Debian 12's haproxy 2.6 (the version the fleet test and docs/operations.md's recipe were checked with).
apt-get install -y -q --no-install-recommends haproxy
