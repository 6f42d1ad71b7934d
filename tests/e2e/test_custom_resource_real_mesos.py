"""The custom-resource scenarios of test_custom_resource.py against a real Apache Mesos master and
agents, agent 0 started with ``fpgas:1`` in its --resources.

Not part of `make test`: collected only when TFMESOS_REAL_MESOS names the folder of the real-mesos
scripts, as `make test-real-mesos` does (see real_mesos.py). The same jobs and assertions as
against the embedded master: a role with ``"resources": ["fpgas:1"]`` runs on the agent that
offers FPGAs, a second such job waits queued until the first ends, and jobs asking for a resource
no agent has (or more FPGAs than any agent has) fail at once, naming it.
"""
from __future__ import annotations

import pytest

from tests.e2e.real_mesos import RealMesos
from tests.e2e.test_custom_resource import run_fpga_jobs

pytestmark = pytest.mark.slow


def test_a_role_with_fpgas_runs_on_the_real_agent_that_offers_them(tmp_path):
    master = RealMesos(tmp_path / "mesos", ["cpus:1;mem:1024;disk:1000;fpgas:1;ports:[31000-31999]",
                                            "cpus:1;mem:1024;disk:1000;ports:[32000-32999]"])
    try:
        assert sorted(a["resources"].get("fpgas", 0) for a in master.state()["slaves"]) == [0, 1]  # /state shows it
        run_fpga_jobs(tmp_path, master)
    finally:
        master.stop()
