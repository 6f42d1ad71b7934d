"""Failover with real processes and a real ZooKeeper.

Scheduler: kill -9 mid-training, start it again with the same command; it reads its framework id
from ZooKeeper and the job goes on under the same framework without launching anything twice.
Master: kill -9 the ``tfmesos local-master`` mid-training and start it again on the same port with
the same work dir; it re-adopts the running executors, the scheduler re-subscribes, the job succeeds.

In both, the chief trains the example's 400 steps and then waits for a gate the test opens once the
scheduler has re-registered: the job runs across the failover however loaded the machine, with no
margin of steps to train after it.
"""
from __future__ import annotations

import json
import re
import signal
from pathlib import Path

import psutil
import pytest
from kazoo.client import KazooClient

from tests.e2e.harness import LocalMaster, run_scheduler, task_processes, wait_gone, write_options
from tests.e2e.test_jobs import PSS

SERVICE = "zk-failover"


def gated(gate: Path) -> dict:
    """The example's job, its chief held open after training until ``gate`` exists."""
    return {"command": '$TFMESOS_PYTHON train.py && while [ ! -e "$GATE" ]; do sleep 0.5; done',
            "env": ["TRAIN_STEPS=400", "CHECKPOINT_EVERY=100", f"GATE={gate}"]}


def chief_task(service: str) -> psutil.Process | None:
    """The chief's task: the shell that runs its training and then its gate (lives until the gate)."""
    for p in task_processes(service):
        try:
            env, cmd = p.environ(), p.cmdline()
        except psutil.Error:
            continue
        if env.get("TFMESOS_JOB_NAME") == "chief" and env.get("TFMESOS_TASK_INDEX") == "0" and cmd[:1] == ["/bin/sh"]:
            return p
    return None




@pytest.fixture
def kazoo(zk):
    client = KazooClient(hosts=zk.hosts, timeout=15)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


@pytest.fixture
def master(tmp_path):
    m = LocalMaster(tmp_path / "master")
    yield m
    m.stop()


def saved_state(kazoo: KazooClient, node: str) -> dict | None:
    if kazoo.exists(node) is None:
        return None
    data, _ = kazoo.get(node)
    return json.loads(data)


def test_scheduler_killed_and_restarted_resumes_from_zookeeper(tmp_path, zk, kazoo, master):
    gate = tmp_path / "re-registered"
    opts = write_options(tmp_path / "o.json", PSS, service={"name": SERVICE}, job=gated(gate))
    args = ["--master", master.address, "--zk", f"zk://{zk.hosts}/tfmesos"]
    node = f"/tfmesos/{SERVICE}/state"
    assert saved_state(kazoo, node) is None

    first = run_scheduler(opts, *args)
    try:
        fid = first.wait_for(r"registered as framework (\S+)", 60).group(1)
        first.wait_for(r"chief:0 \| step 100 ", 120)
    finally:
        first.kill(signal.SIGKILL)
        first.wait(30)
    assert first.proc.returncode == -signal.SIGKILL
    saved = saved_state(kazoo, node)
    assert saved is not None and saved["framework_id"] == fid, "the framework id is in ZooKeeper, not on local disk"
    assert not (tmp_path / "state").exists()
    assert chief_task(SERVICE) is not None, "the job runs on while no scheduler is there"

    second = run_scheduler(opts, *args)
    try:
        second.wait_for(rf"resuming job '{SERVICE}' as framework {re.escape(fid)} \(state in zk://", 60)
        second.wait_for(rf"re-registered as framework {re.escape(fid)}", 60)
        assert chief_task(SERVICE) is not None, "the job ran on until the second scheduler took over"
        gate.touch()
        assert second.wait(120) == 0, second.output[-4000:]
    finally:
        second.killpg()
    out = second.output
    assert f"job {SERVICE} SUCCEEDED: chief:0 finished" in out
    assert re.search(r"chief:0 +127\.0\.0\.1:\d+ +TASK_FINISHED", out)
    assert re.search(r"\bregistered as framework", out.replace("re-registered", "")) is None, "no new framework"

    launched_first = re.findall(r"launch \S+ as (\S+)", first.output)
    launched_second = re.findall(r"launch \S+ as (\S+)", out)
    assert len(launched_first) >= 4
    assert launched_second == [], "the restarted scheduler adopted the running tasks:\n" + out[-4000:]
    state = master.state()
    frameworks = state.get("frameworks", []) + state.get("completed_frameworks", [])
    assert [f["id"] for f in frameworks] == [fid], "one framework, the same across the failover"
    ids = [t["id"] for f in frameworks for t in f.get("tasks", []) + f.get("completed_tasks", [])]
    assert len(ids) == len(set(ids)), "no task id launched twice"
    assert sorted(ids) == sorted(launched_first + launched_second)

    assert kazoo.exists(node) is None, "the finished job's state is cleared from ZooKeeper"
    assert not wait_gone(SERVICE)


def restarted_master(old: LocalMaster) -> LocalMaster:
    """A new ``tfmesos local-master`` on the same port with the same work dir (argparse: the last
    ``--port`` wins over the harness's ``--port 0``)."""
    port = old.address.rsplit(":", 1)[1]
    new = LocalMaster(old.work_dir, extra=["--port", port])
    assert new.address == old.address
    return new


@pytest.fixture
def reap():
    """Kills what a failed test left: with its master gone, nothing else would end the executors."""
    services: list[str] = []
    yield services.append
    for service in services:
        for proc in task_processes(service):
            proc.kill()


def test_master_killed_and_restarted_readopts_the_running_job(tmp_path, zk, reap):
    reap("master-failover")
    gate = tmp_path / "re-registered"
    opts = write_options(tmp_path / "o.json", PSS, service={"name": "master-failover"}, job=gated(gate))
    first_master = LocalMaster(tmp_path / "master")
    second_master = None
    run = None
    try:
        run = run_scheduler(opts, "--master", first_master.address, "--zk", f"zk://{zk.hosts}/tfmesos")
        fid = run.wait_for(r"registered as framework (\S+)", 60).group(1)
        run.wait_for(r"chief:0 \| step 100 ", 120)
        chief = chief_task("master-failover")
        assert chief is not None
        first_master.kill(signal.SIGKILL)
        first_master.wait(30)
        launched_before = re.findall(r"launch \S+ as (\S+)", run.output)
        assert chief.is_running(), "the tasks live on while the master is down"

        second_master = restarted_master(first_master)
        run.wait_for(rf"re-registered as framework {re.escape(fid)}", 60)
        assert chief.is_running(), "the chief's task ran on until the scheduler re-registered"
        gate.touch()
        assert run.wait(120) == 0, run.output[-4000:]
        out = run.output
        state = second_master.state()
    finally:
        if run is not None:
            run.killpg()
        for m in (second_master, first_master):
            if m is not None:
                m.stop()
    assert "job master-failover SUCCEEDED: chief:0 finished" in out
    assert re.findall(r"launch \S+ as (\S+)", out) == launched_before, (
        "nothing relaunched: the master re-adopted the tasks\n" + out[-4000:])
    assert re.search(r"chief:0 +127\.0\.0\.1:\d+ +TASK_FINISHED", out), out[-3000:]
    frameworks = state.get("frameworks", []) + state.get("completed_frameworks", [])
    assert [f["id"] for f in frameworks] == [fid], "the restarted master knows the same framework, and only it"
    ids = [t["id"] for f in frameworks for t in f.get("tasks", []) + f.get("completed_tasks", [])]
    assert len(ids) == len(set(ids)) == 4 and set(ids) <= set(launched_before), (
        "the new master took over the four tasks that were running, and launched none")
    assert not wait_gone("master-failover")
