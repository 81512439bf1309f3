#!/usr/bin/env bash
# Install podman, buildah and runc from Debian's packages when they are missing: only the image
# test (deploy/image_test.go TestImage) needs them, and it runs this script itself, so nothing
# else pays for the install. Without root (or apt) the install is skipped and that test skips,
# saying why.
#
# runc besides podman's default crun: crun refuses a host whose cgroups are in hybrid mode (v1
# controllers plus a cgroup2 hierarchy with a controller of its own), which is what some CI and
# sandbox VMs have; runc runs containers there.
set -euo pipefail
if command -v podman >/dev/null 2>&1 && command -v buildah >/dev/null 2>&1 && command -v runc >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "podman/buildah/runc not found and cannot install them here: the image test will skip (apt-get install podman buildah runc)" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# The packages' services are not wanted (the test runs podman directly).
policy=/usr/sbin/policy-rc.d
made_policy=
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && made_policy=1
fi
trap '[ -n "$made_policy" ] && rm -f "$policy"' EXIT
# Debian 12's podman 4.3, buildah 1.28 and runc 1.1 (the versions the image test was checked with).
apt-get install -y -q --no-install-recommends podman buildah runc
