"""The layering the README promises, checked on the source: the core stays pure, the embedded
master stays a separate program."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "tfmesos"
# Modules that would give the core I/O, a clock, threads or logging: decisions must not depend on them.
IMPURE = {"os", "io", "sys", "time", "datetime", "socket", "threading", "asyncio", "subprocess",
          "logging", "signal", "select", "shutil", "tempfile", "pathlib", "urllib", "http", "requests",
          "kazoo", "pymesos", "multiprocessing", "concurrent"}


def _imports(path: Path) -> list[tuple[int, str]]:
    """(level, dotted name) of every import in a module; level > 0 for relative imports."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(0, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.level, node.module or ""))
    return found


@pytest.mark.parametrize("module", sorted((PACKAGE / "core").glob("*.py")), ids=lambda p: p.name)
def test_core_imports_no_io_clock_thread_or_logging(module: Path) -> None:
    impure = [name for level, name in _imports(module) if level == 0 and name.split(".")[0] in IMPURE]
    assert not impure, f"tfmesos/core/{module.name} imports {impure}: the core must stay pure"


@pytest.mark.parametrize("module", sorted((PACKAGE / "localmaster").glob("*.py")), ids=lambda p: p.name)
def test_localmaster_imports_nothing_else_of_tfmesos(module: Path) -> None:
    outside = [("." * level) + name for level, name in _imports(module)
               if (level == 0 and name.split(".")[0] == "tfmesos") or level >= 2]
    assert not outside, f"localmesos/{module.name} imports {outside}: it must stay a separate program"


@pytest.mark.parametrize("module", sorted((PACKAGE / "core").glob("*.py")), ids=lambda p: p.name)
def test_core_reads_no_mesos_wire(module: Path) -> None:
    # Mesos JSON and the framework-message wire live in tfmesos/mesos; the core sees plain dataclasses.
    wire = [("." * level) + name for level, name in _imports(module)
            if name.split(".")[0] == "json" or (level == 2 and name.startswith("mesos"))
            or name.startswith("tfmesos.mesos")]
    text = module.read_text()
    assert not wire, f"tfmesos/core/{module.name} imports {wire}: the wire belongs to tfmesos/mesos"
    assert '["value"]' not in text, f"tfmesos/core/{module.name} reads Mesos JSON ids: parse in tfmesos/mesos"
