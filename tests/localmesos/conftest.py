"""Fixtures for the embedded master tests: masters that always stop, leak checks."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from localmesos import LocalMaster, Tuning
from tests.localmesos.sandbox_procs import assert_no_processes


@pytest.fixture
def make_master(tmp_path: Path) -> Iterator[Callable[..., LocalMaster]]:
    """Start LocalMasters (trace-like single agent by default); stop them and check for leaks."""
    masters: list[LocalMaster] = []

    def factory(**kwargs: Any) -> LocalMaster:
        kwargs.setdefault("work_dir", tmp_path / f"work{len(masters)}")
        kwargs.setdefault("agents", 1)
        kwargs.setdefault("agent_cpus", 2.0)
        kwargs.setdefault("agent_mem", 4096.0)
        kwargs.setdefault("agent_disk", 10000.0)
        kwargs.setdefault("ports_per_agent", 1001)  # [31000-32000] like the recorded agent
        kwargs.setdefault("tuning", Tuning(stop_grace_period=1.0))
        master = LocalMaster(**kwargs)
        masters.append(master)
        return master.start()

    yield factory
    for master in masters:
        master.stop()
    for master in masters:
        assert_no_processes(master.work_dir)
