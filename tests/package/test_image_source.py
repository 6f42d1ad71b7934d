"""What the image build takes from the tree: every package setup.cfg installs is in the build
context, and the digest that keys the image's tfmesos layer (tools/image/source_digest.py)
follows the context's files and nothing else."""
from __future__ import annotations

import configparser
import importlib.util
from pathlib import Path

from tests.package.helpers import ROOT

_spec = importlib.util.spec_from_file_location("source_digest", ROOT / "tools" / "image" / "source_digest.py")
source_digest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(source_digest)


def test_every_installed_package_is_in_the_build_context():
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    tops = {p.strip().split(".")[0] for p in setup["options.packages.find"]["include"].split(",") if p.strip()}
    assert tops and tops <= set(source_digest.allowed(ROOT)), (tops, source_digest.allowed(ROOT))


def _tree(root: Path) -> Path:
    (root / "pkg" / "__pycache__").mkdir(parents=True)
    (root / ".dockerignore").write_text("*\n!setup.cfg\n!pkg\n**/__pycache__\n")
    (root / "setup.cfg").write_text("[metadata]\n")
    (root / "pkg" / "a.py").write_text("A = 1\n")
    (root / "pkg" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    (root / "notes.txt").write_text("left out\n")
    return root


def test_the_digest_follows_the_context_and_ignores_what_it_leaves_out(tmp_path):
    root = _tree(tmp_path)
    first = source_digest.digest(root)
    assert len(first) == source_digest.LENGTH and first == source_digest.digest(root)
    (root / "notes.txt").write_text("changed, but not in the context\n")
    (root / "pkg" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\1")
    assert source_digest.digest(root) == first
    (root / "pkg" / "a.py").write_text("A = 2\n")
    changed = source_digest.digest(root)
    assert changed != first
    (root / "pkg" / "a.py").rename(root / "pkg" / "b.py")  # same bytes, another name
    assert source_digest.digest(root) not in (first, changed)
