#!/usr/bin/env bash
# For each Python version given (e.g. 3.12 3.13): a fresh venv, README's one `pip install '.[tensorflow]'`
# of this tree, then the quick example (`make run`'s, examples/pss_digits) on the embedded master, run
# from outside the tree. The interpreter is the first found of python3.X on PATH, pyenv's, or Debian's
# package (installed when apt has it); where none can be had, or TensorFlow has no wheel for that
# version, it says so and goes on. Exits non-zero when a version that could be tried failed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tfmesos-pythons.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
failed=()

find_python() {
  local version=$1 found
  if command -v "python$version" >/dev/null && "python$version" -c 'import venv, ensurepip' 2>/dev/null; then
    command -v "python$version"; return
  fi
  for found in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$version".*/bin/python; do
    [ -x "$found" ] && { echo "$found"; return; }
  done
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && apt-cache show "python$version-venv" >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "python$version-venv" >/dev/null && command -v "python$version"
    return
  fi
  return 1
}

for version in "$@"; do
  SECONDS=0
  rm -rf "$WORK"/py*  # the last version's venv (TensorFlow's is 2 GB): one at a time on the disk
  if ! python=$(find_python "$version"); then
    echo "try_pythons: Python $version: none on this machine (not on PATH, not in pyenv, no Debian package here); not tried"
    continue
  fi
  venv=$WORK/py$version
  "$python" -m venv "$venv"
  echo "try_pythons: Python $version ($("$venv/bin/python" -V 2>&1), $python): pip install '.[tensorflow]'"
  if ! (cd "$ROOT" && "$venv/bin/pip" install -q --disable-pip-version-check '.[tensorflow]') > "$WORK/pip-$version.log" 2>&1; then
    if grep -q "from versions: none\|No matching distribution found for tensorflow" "$WORK/pip-$version.log"; then
      echo "try_pythons: Python $version: TensorFlow has no wheel for it on the index; not run"
      continue
    fi
    tail -20 "$WORK/pip-$version.log"; failed+=("$version (install)"); continue
  fi
  tf=$("$venv/bin/python" -c "import importlib.metadata as m; print(m.version('tensorflow'), m.version('tf-keras'))")
  mkdir -p "$WORK/run-$version"
  if (cd "$WORK/run-$version" && "$venv/bin/tfmesos" run "$ROOT/examples/pss_digits/options.json" -q \
        --state-dir "$WORK/run-$version/state") > "$WORK/run-$version.log" 2>&1 \
     && grep -q "job pss-digits SUCCEEDED" "$WORK/run-$version.log"; then
    echo "try_pythons: Python $version: TensorFlow and tf-keras $tf; the quick example SUCCEEDED (${SECONDS}s with the install)"
  else
    tail -30 "$WORK/run-$version.log"; failed+=("$version (run)")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "try_pythons: failed on ${failed[*]}" >&2
  exit 1
fi
