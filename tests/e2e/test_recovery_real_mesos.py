"""The fault-tolerance scenarios of test_recovery.py against a real Apache Mesos (see real_mesos.py),
an agent lost and back (SIGSTOP / SIGCONT with 1 s x 3 pings) included."""
from __future__ import annotations

import signal

import psutil
import pytest

from tests.e2e.real_mesos import RealMesos
from tests.e2e.test_keras_examples import run_keras_mwms_killed_worker, run_keras_pss_killed_worker
from tests.e2e.test_recovery import (
    run_agent_lost_then_back,
    run_agent_restart_keeps_the_job,
    run_killed_ps,
    run_killed_worker,
    run_scheduler_killed,
)
from tests.e2e.test_scenarios import scenario_id

pytestmark = pytest.mark.slow

AGENT = "cpus:4;mem:8192;disk:4000;ports:[31000-31999]"


class RestartableAgents(RealMesos):
    def restart_agent(self) -> None:
        """SIGKILL mesos-agent 0 and start it again on its work dir with --recover=reconnect."""
        self.kill_agent(0)
        self.start_agent(0, recover=True)


@pytest.mark.parametrize("scenario", [run_agent_restart_keeps_the_job, run_killed_worker, run_killed_ps,
                                      run_scheduler_killed, run_keras_mwms_killed_worker,
                                      run_keras_pss_killed_worker], ids=scenario_id)
def test_scenario_on_real_mesos(tmp_path, scenario):
    with RestartableAgents(tmp_path / "mesos", [AGENT]) as cluster:
        scenario(tmp_path, cluster)


class StoppableAgents(RealMesos):
    """Agents stopped and continued with SIGSTOP / SIGCONT (start the master with short pings)."""

    def stop_agent(self, index: int) -> None:
        self.signal_agent(index, signal.SIGSTOP)

    def continue_agent(self, index: int) -> None:
        self.signal_agent(index, signal.SIGCONT)

    def runs_on(self, proc: psutil.Process, index: int) -> bool:
        return self.sandbox_of(proc, index)


def test_agent_lost_then_back_leaves_no_stale_process_on_real_mesos(tmp_path):
    with StoppableAgents(tmp_path / "mesos", [AGENT, AGENT.replace("31000-31999", "32000-32999")],
                         master_flags=["--agent_ping_timeout=1secs", "--max_agent_ping_timeouts=3"]) as cluster:
        run_agent_lost_then_back(tmp_path, cluster)
