"""`tfmesos run` and `tfmesos local-master` size the embedded cluster with the same flags."""
from __future__ import annotations

import pytest

from tfmesos.client.cli import build_parser
from localmesos.cli import _parser as local_master_parser
from localmesos.config import MasterConfig
from tfmesos.scheduler.runner import RunSettings

SIZE = ["--agents", "3", "--agent-cpus", "2.5", "--agent-mem", "1024", "--agent-disk", "500", "--gpus-per-agent", "1"]
SHORT = ["--agents", "3", "--cpus", "2.5", "--mem", "1024", "--disk", "500", "--gpus-per-agent", "1"]
FIELDS = ("agents", "agent_cpus", "agent_mem", "agent_disk", "gpus_per_agent")


@pytest.mark.parametrize("flags", [SIZE, SHORT], ids=["long", "short"])
def test_both_commands_take_the_same_size_flags(flags: list[str]) -> None:
    run = build_parser().parse_args(["run", "o.json", *flags])
    local = local_master_parser().parse_args(flags)
    wanted = (3, 2.5, 1024.0, 500.0, 1)
    assert tuple(getattr(run, f) for f in FIELDS) == wanted
    assert tuple(getattr(local, f) for f in FIELDS) == wanted


def test_defaults_have_one_home() -> None:
    run = build_parser().parse_args(["run", "o.json"])
    local = local_master_parser().parse_args([])
    master, settings = MasterConfig(), RunSettings()
    for f in FIELDS:
        assert getattr(run, f) == getattr(local, f) == getattr(master, f) == getattr(settings, f), f
