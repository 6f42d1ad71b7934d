"""The fault-tolerance scenarios of test_recovery.py against a real Apache Mesos (see real_mesos.py)."""
from __future__ import annotations

import pytest

from .real_mesos import RealMesos
from .test_recovery import run_agent_restart_keeps_the_job

pytestmark = pytest.mark.slow

AGENT = "cpus:4;mem:8192;disk:4000;ports:[31000-31999]"


class RestartableAgents(RealMesos):
    def restart_agent(self) -> None:
        """SIGKILL mesos-agent 0 and start it again on its work dir with --recover=reconnect."""
        self.kill_agent(0)
        self.start_agent(0, recover=True)


def test_agent_restart_with_recovery_loses_no_task_on_real_mesos(tmp_path):
    cluster = RestartableAgents(tmp_path / "mesos", [AGENT])
    try:
        run_agent_restart_keeps_the_job(tmp_path, cluster)
    finally:
        cluster.stop()
