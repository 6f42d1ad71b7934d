"""The fault-tolerance scenarios of test_recovery.py against a real Apache Mesos (see real_mesos.py),
and an agent lost for good, which only a real master can show (the embedded one pings no agent)."""
from __future__ import annotations

import signal

import psutil
import pytest

from tests.e2e.harness import accuracy, eventually, run_scheduler, task_processes, wait_gone, write_options
from tests.e2e.real_mesos import RealMesos
from tests.e2e.test_jobs import PSS
from tests.e2e.test_recovery import (
    LONG,
    run_agent_restart_keeps_the_job,
    run_killed_ps,
    run_killed_worker,
    run_scheduler_killed,
    task_ids,
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
                                      run_scheduler_killed], ids=scenario_id)
def test_scenario_on_real_mesos(tmp_path, scenario):
    with RestartableAgents(tmp_path / "mesos", [AGENT]) as cluster:
        scenario(tmp_path, cluster)


def test_agent_lost_for_good_then_back_leaves_no_stale_process_on_real_mesos(tmp_path):
    """The agent running the chief stops answering (SIGSTOP; the master pings every 1 s, 3 misses):
    its tasks are TASK_LOST and the job carries on on the other agent. Back (SIGCONT), the agent
    is told to kill what it ran for us (the framework is not PARTITION_AWARE): no stale process,
    no second live copy of a task, no task id twice, and the job succeeds."""
    cluster = RealMesos(tmp_path / "mesos", [AGENT, AGENT.replace("31000-31999", "32000-32999")],
                        master_flags=["--agent_ping_timeout=1secs", "--max_agent_ping_timeouts=3"])
    name = "agent-lost"
    opts = write_options(tmp_path / "o.json", PSS, service={"name": name},
                         job={**LONG, "checkpoint_dir": str(tmp_path / "checkpoints")})
    run = run_scheduler(opts, "--master", cluster.address, "--state-dir", str(tmp_path / "state"))
    try:
        run.wait_for(r"chief:0 \| step 200 ", 180)
        tasks = [t for f in cluster.state()["frameworks"] for t in f["tasks"] if t["state"] == "TASK_RUNNING"]
        agent_id = next(t["slave_id"] for t in tasks if t["name"].endswith("/job:chief/task:0"))
        index = int(agent_id.rsplit("-S", 1)[1])
        stranded = [p for p in task_processes(name) if cluster.sandbox_of(p, index)]
        assert stranded, "the chief's agent runs processes of the job"
        cluster.signal_agent(index, signal.SIGSTOP)
        run.wait_for(r"chief:0 TASK_LOST", 60)
        run.wait_for(r"launch chief:0 as \S+ on \S+", 120)
        cluster.signal_agent(index, signal.SIGCONT)
        _, alive = psutil.wait_procs(stranded, timeout=60)
        assert not [p for p in alive if p.status() != psutil.STATUS_ZOMBIE], "the returned agent killed our old tasks"
        eventually(lambda: _one_copy_each(name), 60, "one live process per task")
        assert run.wait(400) == 0, run.output[-4000:]
        ids = task_ids(cluster.state(), name)
        assert len(ids) == len(set(ids)), ids
        assert not wait_gone(name)
    finally:
        run.killpg()
        cluster.stop()
    assert accuracy(run.output) >= 0.9
    assert "chief:0 TASK_LOST" in run.output


def _one_copy_each(name: str) -> bool:
    """Each (role, index) of the job has at most one live task process (the TF_CONFIG'd python)."""
    keys = []
    for proc in task_processes(name):
        try:
            env, cmd = proc.environ(), proc.cmdline()
        except psutil.Error:
            continue
        if "TFMESOS_JOB_NAME" in env and cmd[:1] != ["/bin/sh"] and "tfmesos.executor" not in cmd:
            keys.append((env["TFMESOS_JOB_NAME"], env["TFMESOS_TASK_INDEX"]))
    return len(keys) == len(set(keys))
