#!/usr/bin/env bash
# `make image`: build tfmesos/tfmesos:TAG from the Dockerfile at the top of the working tree,
# print its size, and check inside it that tensorflow and tfmesos import.
#   TAG         default: the project's version (setup.cfg)
#   BASE        the Dockerfile's BASE; default: the local Debian 12 base that base.sh builds.
#               Users with a registry at hand: BASE=docker.io/library/python:3.11-slim-bookworm
#   TF_VERSION  a TensorFlow release for the image (empty: the newest); TF_PACKAGE likewise.
#   IMAGE       default: tfmesos/tfmesos:$TAG
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tools/image/common.sh"
LOCAL_BASE=tfmesos-base:bookworm
BASE=${BASE:-$LOCAL_BASE}
[ "$BASE" = "$LOCAL_BASE" ] || export NEED_MMDEBSTRAP=0
"$ROOT/tools/image/ensure_deps.sh"
use_engine
TAG=${TAG:-$(sed -n 's/^version *= *//p' "$ROOT/setup.cfg")}
IMAGE=${IMAGE:-tfmesos/tfmesos:$TAG}
[ "$BASE" = "$LOCAL_BASE" ] && "$ROOT/tools/image/base.sh" "$LOCAL_BASE"

# pip inside the build reaches the package index the way this machine's pip does: its index URL
# and its CA bundle (behind a TLS-inspecting proxy Debian's stock bundle fails) go in as build
# secrets, so neither lands in a layer. Local (file://) indexes and find-links are not visible in
# the build and are left out.
secret_dir=$(mktemp -d "$IMAGE_WORK/secrets.XXXXXX")
trap 'rm -rf "$secret_dir"' EXIT
# The last value pip reports for a setting (its config files, then PIP_* variables).
pip_setting() { python3 -m pip config list 2>/dev/null | sed -n "s/^[^.]*\.$1='\(.*\)'\$/\1/p" | tail -1; }
for candidate in "${PIP_CERT:-}" "$(pip_setting cert)" "${REQUESTS_CA_BUNDLE:-}" "${SSL_CERT_FILE:-}" \
                 /etc/ssl/certs/ca-certificates.crt; do
  if [ -n "$candidate" ] && [ -s "$candidate" ]; then cp "$candidate" "$secret_dir/ca.pem"; break; fi
done
remote() { for url in $1; do case "$url" in http://*|https://*) printf '%s ' "$url" ;; esac; done; }
index=$(remote "${PIP_INDEX_URL:-$(pip_setting index-url)}")
extra=$(remote "${PIP_EXTRA_INDEX_URL:-$(pip_setting extra-index-url)}")
{
  echo "[global]"
  [ -s "$secret_dir/ca.pem" ] && echo "cert = /run/secrets/pipca"
  [ -n "$index" ] && echo "index-url = ${index%% *}"
  [ -n "$extra" ] && echo "extra-index-url = $extra"
  echo "timeout = ${PIP_DEFAULT_TIMEOUT:-120}"
} > "$secret_dir/pip.conf"
secrets=(--secret "id=pip,src=$secret_dir/pip.conf")
[ -s "$secret_dir/ca.pem" ] && secrets+=(--secret "id=pipca,src=$secret_dir/ca.pem")

engine_flags=()
if [ "$ENGINE" = docker ]; then export DOCKER_BUILDKIT=1; else engine_flags+=(--layers); fi
start=$(date +%s)
echo "make image: building $IMAGE with $ENGINE (BASE=$BASE, TF ${TF_VERSION:-newest})" >&2
source=$(python3 "$ROOT/tools/image/source_digest.py" "$ROOT")
# The image this build replaces: once the tag moves, nothing names it, and each build would leave
# one behind (a few of them filled a CI machine's disk). Removed below; the layers the new image
# shares with it stay.
replaced=$("$ENGINE" image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)
"$ENGINE" build "${engine_flags[@]}" "${secrets[@]}" -f "$ROOT/Dockerfile" -t "$IMAGE" \
  --build-arg "BASE=$BASE" --build-arg "TF_VERSION=${TF_VERSION:-}" \
  --build-arg "TF_PACKAGE=${TF_PACKAGE:-tensorflow}" --build-arg "TFMESOS_SOURCE=$source" "$ROOT"
# The image holds this tree's tfmesos (a stale cached layer would hold another's), and it imports.
marker=$("$ENGINE" run --rm --network=none "$IMAGE" cat /etc/tfmesos-image)
if ! grep -qx "source $source" <<<"$marker"; then
  echo "make image: $IMAGE holds tfmesos from another tree (marker: $marker; this tree: source $source)" >&2
  exit 1
fi
"$ENGINE" run --rm --network=none "$IMAGE" python3 -c \
  "import tensorflow as tf, tfmesos; print('smoke: tensorflow', tf.__version__, 'tfmesos', tfmesos.__version__)"
if [ -n "$replaced" ] && [ "$replaced" != "$("$ENGINE" image inspect --format '{{.Id}}' "$IMAGE")" ]; then
  "$ENGINE" rmi "$replaced" >/dev/null 2>&1 || echo "make image: the image $IMAGE replaced ($replaced) is still in use; kept" >&2
fi
echo "make image: $IMAGE is $(image_size_mb "$IMAGE") MB, built in $(( $(date +%s) - start )) s" >&2
