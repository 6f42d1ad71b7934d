"""An agent drained mid-training on the embedded master: the job moves off it at a checkpoint and
loses no step, with max_restarts 0 (tests/e2e/drains.py runs each case; issue 38)."""
from __future__ import annotations

import pytest

from tests.e2e.drains import (AGENT_CPUS, AGENT_MEM, KERAS_MWMS, KERAS_PSS, MWMS_HANDLER, PSS_LOOP, agents_for,
                              assert_lost_nothing, run_drain)
from tests.e2e.harness import LocalMaster


CASES = [(MWMS_HANDLER, ("worker", 1)), (KERAS_MWMS, ("worker", 1)), (KERAS_PSS, ("worker", 1)),
         (PSS_LOOP, ("worker", 1)), (KERAS_PSS, ("chief", 0))]


@pytest.mark.parametrize("mode, leaving", CASES, ids=lambda c: c.name if hasattr(c, "name") else f"{c[0]}{c[1]}")
def test_an_agent_drained_mid_training_loses_no_step(tmp_path, mode, leaving):
    master = LocalMaster(tmp_path / "m", agents=agents_for(mode), extra=[
        "--machine-per-agent", "--agent-cpus", str(AGENT_CPUS), "--agent-mem", str(AGENT_MEM)])
    try:
        assert_lost_nothing(run_drain(tmp_path, master, mode, leaving), mode, leaving)
    finally:
        master.stop()
