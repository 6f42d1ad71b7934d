"""`make bench` must not rot between runs: every benchmark module imports against today's code
(a moved function broke them once, unnoticed until the next benchmark run)."""
from __future__ import annotations

import importlib
from pathlib import Path

import pytest

MODULES = sorted(p.stem for p in (Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py")
                 if p.stem != "__init__")


@pytest.mark.parametrize("name", MODULES)
def test_every_benchmark_module_imports(name: str) -> None:
    importlib.import_module(f"benchmarks.{name}")
