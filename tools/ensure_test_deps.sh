#!/usr/bin/env bash
# What the suite needs from Debian besides the venv: a real ZooKeeper (the failover tests) and
# chromium with its chromedriver (the status page's browser test). Install what is missing when
# this machine can (root with apt-get); otherwise say what is missing and fail: no test is skipped.
set -euo pipefail
ZK=/usr/share/zookeeper/bin/zkServer.sh
missing=()
if ! { [ -x "$ZK" ] && command -v java >/dev/null; }; then missing+=(zookeeper); fi
if ! [ -x /usr/bin/chromium ]; then missing+=(chromium); fi
if ! [ -x /usr/bin/chromedriver ]; then missing+=(chromium-driver); fi
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "make test: installing Debian's ${missing[*]} (the tests need a real ZooKeeper and a real browser)" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
  exit 0
fi
echo "make test: missing ${missing[*]}, which cannot be installed here (needs root and apt-get)." >&2
echo "  install with: sudo apt-get install ${missing[*]}" >&2
echo "  or leave those tests out on purpose: make test PYTEST_ARGS='-m \"not zookeeper and not slow\"'" >&2
exit 1
