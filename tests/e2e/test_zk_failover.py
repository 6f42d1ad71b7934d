"""Scheduler failover with its state in a real ZooKeeper: kill -9 mid-training, start it again with
the same command, and the job goes on under the same framework without launching anything twice.

(A master failover is not tested: ``tfmesos local-master`` keeps no state on disk and takes a new
master id at every start, so a restarted one knows neither the framework nor its executors.)
"""
from __future__ import annotations

import json
import re
import signal

import pytest
from kazoo.client import KazooClient

from .. import zookeeper
from .harness import LocalMaster, find_task_process, run_scheduler, wait_gone, write_options
from .test_jobs import PSS

SERVICE = "zk-failover"
# Long enough that the chief is still training when the second scheduler takes over.
TRAINING = {"env": ["TRAIN_STEPS=1000", "CHECKPOINT_EVERY=100"]}


@pytest.fixture(scope="module")
def zk(tmp_path_factory):
    if not zookeeper.available():
        pytest.skip("ZooKeeper is not installed (.ci/run installs Debian's zookeeper package)")
    server = zookeeper.ZooKeeper(tmp_path_factory.mktemp("zk")).start()
    yield server
    server.stop()


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
    opts = write_options(tmp_path / "o.json", PSS, service={"name": SERVICE}, job=TRAINING)
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
    assert find_task_process(SERVICE, "chief", 0) is not None, "the job runs on while no scheduler is there"

    second = run_scheduler(opts, *args)
    try:
        second.wait_for(rf"resuming job '{SERVICE}' as framework {re.escape(fid)} \(state in zk://", 60)
        second.wait_for(rf"re-registered as framework {re.escape(fid)}", 60)
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
    assert launched_second == [], "the restarted scheduler adopted the running tasks"
    state = master.state()
    frameworks = state.get("frameworks", []) + state.get("completed_frameworks", [])
    assert [f["id"] for f in frameworks] == [fid], "one framework, the same across the failover"
    ids = [t["id"] for f in frameworks for t in f.get("tasks", []) + f.get("completed_tasks", [])]
    assert len(ids) == len(set(ids)), "no task id launched twice"
    assert sorted(ids) == sorted(launched_first + launched_second)

    assert kazoo.exists(node) is None, "the finished job's state is cleared from ZooKeeper"
    assert not wait_gone(SERVICE)
