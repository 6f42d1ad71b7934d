#!/usr/bin/env bash
# The suite runs against a real ZooKeeper (Debian's package). Install it when it is missing and
# this machine can (root with apt-get); otherwise say what is missing and fail: no test is skipped.
set -euo pipefail
ZK=/usr/share/zookeeper/bin/zkServer.sh
if [ -x "$ZK" ] && command -v java >/dev/null; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "make test: installing Debian's zookeeper package (the ZooKeeper tests need a real server)" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq zookeeper >/dev/null
  exit 0
fi
echo "make test: ZooKeeper is missing ($ZK and java) and cannot be installed here (needs root and apt-get)." >&2
echo "  install it with: sudo apt-get install zookeeper" >&2
echo "  or skip those tests on purpose: make test PYTEST_ARGS='-m \"not zookeeper\"'" >&2
exit 1
