"""The embedded master's module map (its package docstring) names every module it has."""
from __future__ import annotations

import re
from pathlib import Path

import tfmesos.localmaster

FOLDER = Path(tfmesos.localmaster.__file__).resolve().parent


def test_localmaster_module_map_names_every_module_and_no_other() -> None:
    doc = tfmesos.localmaster.__doc__ or ""
    named = set(re.findall(r"``(\w+)``", doc.split("Module map", 1)[-1]))
    modules = {path.stem for path in FOLDER.glob("*.py")} - {"__init__"}
    assert modules - named == set(), "modules missing from tfmesos/localmaster/__init__.py's map"
    stale = {name for name in named - modules if name.islower()}  # class names are CamelCase
    assert stale == set(), "the map names modules that no longer exist"
