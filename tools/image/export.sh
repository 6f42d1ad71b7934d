#!/usr/bin/env bash
# `make image-export`: the images named (default tfmesos/tfmesos:<version>) as DIR/NAME:TAG.tar,
# the layout a Mesos agent started with --docker_registry=DIR reads (no registry needed).
# Usage: export.sh DIR [IMAGE...]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tools/image/common.sh"
use_engine
DIR=$1; shift
[ $# -gt 0 ] || set -- "tfmesos/tfmesos:$(sed -n 's/^version *= *//p' "$ROOT/setup.cfg")"
for image in "$@"; do python3 "$ROOT/tools/image/export.py" "$ENGINE" "$image" "$DIR"; done
