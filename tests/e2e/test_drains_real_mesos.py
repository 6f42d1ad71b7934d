"""An agent drained mid-training on a real Apache Mesos 1.12 (real_mesos.py): the bars of issue 38
for the MultiWorkerMirroredStrategy custom loop with TensorFlow's PreemptionCheckpointHandler and for
Keras model.fit under both strategies, as test_drains.py checks them on the embedded master."""
from __future__ import annotations

import pytest

from tests.e2e.drains import (AGENT_CPUS, AGENT_MEM, KERAS_MWMS, KERAS_PSS, MWMS_HANDLER, agents_for,
                              assert_lost_nothing, run_drain)
from tests.e2e.real_mesos import RealMesos

pytestmark = pytest.mark.slow


def agents(count: int) -> list[str]:
    """One task's room each, on ports of their own (the agents share 127.0.0.1; side by side,
    real_mesos.worker_ports moves them into the worker's slice, as it does every test's)."""
    return [f"cpus:{AGENT_CPUS:g};mem:{AGENT_MEM:g};disk:4000;ports:[{31000 + 100 * i}-{31099 + 100 * i}]"
            for i in range(count)]


@pytest.mark.parametrize("mode", [MWMS_HANDLER, KERAS_MWMS, KERAS_PSS], ids=lambda m: m.name)
def test_worker_1s_agent_drained_mid_training_loses_no_step_on_real_mesos(tmp_path, mode):
    with RealMesos(tmp_path / "mesos", agents(agents_for(mode))) as cluster:
        assert_lost_nothing(run_drain(tmp_path, cluster, mode, ("worker", 1)), mode, ("worker", 1))
