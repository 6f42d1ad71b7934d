# Sourced by the tools/image scripts: where they keep their files, which container engine they
# drive, and that engine's settings for this kind of host.
#   TFMESOS_IMAGE_WORK  work dir (default ~/.cache/tfmesos-image): the cached base rootfs, podman's
#                       containers.conf, the pip secret.
#   ENGINE              podman or docker; default: a docker whose daemon answers, else podman.
IMAGE_WORK=${TFMESOS_IMAGE_WORK:-${XDG_CACHE_HOME:-$HOME/.cache}/tfmesos-image}
mkdir -p "$IMAGE_WORK"

pick_engine() {
  if [ -n "${ENGINE:-}" ]; then return; fi
  if command -v docker >/dev/null && docker info >/dev/null 2>&1; then ENGINE=docker
  elif command -v podman >/dev/null; then ENGINE=podman
  else ENGINE=; fi
}

# podman on a host with hybrid cgroups and no systemd: runc (crun fails there), cgroupfs, a file
# events log, and default ulimits no higher than the host's hard limits (podman's own default,
# nofile 1048576, is refused where the hard limit is lower).
podman_settings() {
  local nofile nproc conf=$IMAGE_WORK/containers.conf
  nofile=$(ulimit -Hn); nproc=$(ulimit -Hu)
  [ "$nofile" = unlimited ] && nofile=1048576
  if [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; then nproc=32768; fi
  cat > "$conf" <<CONF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
  export CONTAINERS_CONF=$conf
}

use_engine() {
  pick_engine
  if [ -z "$ENGINE" ]; then
    echo "tools/image: no container engine: install podman (tools/image/ensure_deps.sh does) or start dockerd" >&2
    exit 1
  fi
  if [ "$ENGINE" = podman ]; then podman_settings; fi
}

# The image's size in MB, as the engine reports it.
image_size_mb() {
  "$ENGINE" image inspect --format '{{.Size}}' "$1" | awk '{printf "%d", $1 / 1000000}'
}
