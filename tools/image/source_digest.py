"""The digest of what an image build takes from the working tree: every file that .dockerignore's
allow-list lets into the build context (``!path`` lines), its path and its bytes.

Why: the Dockerfile installs tfmesos through a bind mount of the context, and podman/buildah
key a RUN step's layer cache on its command and build arguments, not on what a mount holds. So
build.sh passes this digest as a build argument: a changed tree gets a fresh tfmesos layer, an
unchanged one keeps the cached layer, and the image's marker and label name the tree it holds.

Usage: python3 source_digest.py [ROOT]   (prints 16 hex digits)
"""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path

LENGTH = 16


def allowed(root: Path) -> list[str]:
    """The paths .dockerignore lets in (its ``!`` lines; it ignores everything else)."""
    lines = (root / ".dockerignore").read_text().splitlines()
    return [line[1:].strip() for line in lines if line.startswith("!")]


def files(root: Path) -> list[Path]:
    found: list[Path] = []
    for name in allowed(root):
        top = root / name
        candidates = [top] if top.is_file() else top.rglob("*")
        found += [p for p in candidates if p.is_file() and "__pycache__" not in p.relative_to(root).parts]
    return sorted(set(found))


def digest(root: Path) -> str:
    h = hashlib.sha256()
    for path in files(root):
        data = path.read_bytes()
        h.update(f"{path.relative_to(root).as_posix()}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()[:LENGTH]


if __name__ == "__main__":
    print(digest(Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2])))
