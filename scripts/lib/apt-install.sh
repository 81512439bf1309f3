# shellcheck shell=bash
# Sourced by scripts/install-redis.sh, install-haproxy.sh, install-nginx.sh and install-podman.sh:
# installing the Debian packages a test needs, the one way they all do it.

# can_apt: root and apt-get are here. Without them the scripts install nothing and say so; the
# tests that need the packages skip, saying why.
can_apt() {
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1
}

# apt_install PACKAGE...: apt-get install the packages (no recommends, no questions) without
# starting their services: the tests run their own instances, so policy-rc.d (where invoke-rc.d
# honours it) refuses every start until the script exits.
apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  policy=/usr/sbin/policy-rc.d
  made_policy=
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && made_policy=1
  fi
  trap '[ -n "$made_policy" ] && rm -f "$policy"' EXIT
  apt-get install -y -q --no-install-recommends "$@"
}
