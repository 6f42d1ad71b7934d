"""localmesos loads what a request needs when it needs it: the package's names on first use, the
agent's process and fetch modules with the first process or URI. Structural (which modules a fresh
interpreter holds after an import), not timed: benchmarks/start_end.py times the start."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _loaded_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return set(out.split())


def _under(loaded: set[str], *tops: str) -> list[str]:
    return sorted(m for m in loaded if m in tops or m.startswith(tuple(f"{t}." for t in tops)))


@pytest.mark.parametrize("statement", [
    "import localmesos",
    "import localmesos.cli",  # tfmesos' command line: the agent flags of tfmesos run and local-master
    "from localmesos import DEFAULT_PATH, task_path",  # tfrun: the PATH of worker 0
])
def test_reading_a_rule_starts_no_master(statement: str) -> None:
    loaded = _loaded_after(statement)
    assert _under(loaded, "asyncio", "localmesos.local_master", "localmesos.master", "localmesos.http") == []


def test_the_master_loads_no_process_or_fetch_modules_before_it_needs_them() -> None:
    loaded = _loaded_after("import localmesos.local_master")
    assert "localmesos.agent.agent" in loaded
    assert _under(loaded, "psutil", "urllib.request", "tarfile", "zipfile", "gzip", "hmac") == []


def test_the_lazy_names_are_the_modules_own() -> None:
    import localmesos
    from localmesos.agent import sandbox
    from localmesos.cli import main
    from localmesos.config import Tuning
    from localmesos.local_master import LocalMaster

    assert (localmesos.LocalMaster, localmesos.Tuning, localmesos.main) == (LocalMaster, Tuning, main)
    assert (localmesos.task_path, localmesos.DEFAULT_PATH) == (sandbox.task_path, sandbox.DEFAULT_PATH)
    with pytest.raises(AttributeError):
        localmesos.no_such_name  # noqa: B018
