#!/usr/bin/env bash
# The local base image `make image` builds FROM when no public one is wanted or reachable: Debian 12
# from Debian packages (mmdebstrap), with python3, its venv module and ca-certificates, no docs.
# The root filesystem is cached as a tarball in the work dir (rebuilt when this script or the mirror
# changes) and imported into the engine as $BASE_IMAGE.  Usage: base.sh [BASE_IMAGE]
set -euo pipefail
. "$(dirname "$0")/common.sh"
use_engine
BASE_IMAGE=${1:-tfmesos-base:bookworm}
MIRROR=${DEBIAN_MIRROR:-$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
PACKAGES=python3,python3-venv,ca-certificates
key=$( { cat "$0"; echo "$MIRROR $PACKAGES"; } | sha256sum | cut -c1-12)
rootfs=$IMAGE_WORK/debian12-$key.tar

if [ ! -s "$rootfs" ]; then
  echo "base: building a Debian 12 root filesystem with mmdebstrap ($MIRROR)" >&2
  rm -f "$IMAGE_WORK"/debian12-*.tar
  mmdebstrap --quiet --variant=minbase --include="$PACKAGES" \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    bookworm "$IMAGE_WORK/part.tar" "$MIRROR" "${MIRROR%/debian}/debian-security bookworm-security main"
  mv "$IMAGE_WORK/part.tar" "$rootfs"
fi

# Re-import when the engine lacks the image or holds one from another rootfs.
if [ "$("$ENGINE" image inspect --format '{{index .Config.Labels "tfmesos.rootfs"}}' "$BASE_IMAGE" 2>/dev/null)" != "$key" ]; then
  "$ENGINE" import --change "LABEL tfmesos.rootfs=$key" --change 'CMD ["/bin/bash"]' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    "$rootfs" "$BASE_IMAGE" >/dev/null
  echo "base: imported $BASE_IMAGE ($(image_size_mb "$BASE_IMAGE") MB)" >&2
fi
