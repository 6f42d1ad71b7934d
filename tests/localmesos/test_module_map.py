"""The embedded master's module map: each folder's docstring names every module it has."""
from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import localmesos

ROOT = Path(localmesos.__file__).resolve().parent
FOLDERS = sorted(p.parent for p in ROOT.rglob("__init__.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: str(p.relative_to(ROOT.parent)))
def test_each_folder_map_names_every_module_and_no_other(folder: Path) -> None:
    package = ".".join(folder.relative_to(ROOT.parent).parts)
    doc = importlib.import_module(package).__doc__ or ""
    named = set(re.findall(r"``(\w+)``", doc))
    modules = {path.stem for path in folder.glob("*.py")} - {"__init__"}
    assert modules - named == set(), f"modules missing from {package}'s map"
    subfolders = {p.name for p in folder.iterdir() if (p / "__init__.py").exists()}
    assert all(f"``{name}/``" in doc for name in subfolders), f"{package}'s map misses a folder"
    siblings = {f.name for f in FOLDERS}  # a map may name the folders it may import
    stale = {name for name in named - modules - subfolders - siblings if name.islower() and not name.startswith("__")}
    assert stale == set(), f"{package}'s map names modules that no longer exist"
