#!/usr/bin/env bash
# What `make image` needs from Debian: a container engine (podman with runc, unless a docker
# daemon already answers) and mmdebstrap for the local base. Installs what is missing when this
# machine can (root with apt-get), like tools/ensure_test_deps.sh; otherwise says what and fails.
set -euo pipefail
. "$(dirname "$0")/common.sh"
missing=()
pick_engine
if [ "$ENGINE" != docker ]; then
  command -v podman >/dev/null || missing+=(podman)
  command -v runc >/dev/null || missing+=(runc)
  # podman's overlay storage and rootless helpers
  command -v newuidmap >/dev/null || missing+=(uidmap)
fi
if [ "${NEED_MMDEBSTRAP:-1}" = 1 ] && ! command -v mmdebstrap >/dev/null; then missing+=(mmdebstrap); fi
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "make image: installing Debian's ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}" >/dev/null
  exit 0
fi
echo "make image: missing ${missing[*]}, which cannot be installed here (needs root and apt-get)." >&2
echo "  install with: sudo apt-get install ${missing[*]}" >&2
exit 1
