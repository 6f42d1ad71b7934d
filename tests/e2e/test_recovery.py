"""Fault tolerance with real processes: kill -9 of a worker, of the parameter server, of the scheduler."""
from __future__ import annotations

import json
import re
import signal
import sys

import psutil
import pytest

from localmesos import LocalMaster as EmbeddedMaster, Tuning
from localmesos.ports import free_port_block
from tfmesos.executor.executor import ASK_ENV
from tests.e2e.harness import (LocalMaster, accuracy, eventually, find_task_process, free_port, killed_scheduler,
                               run_scheduler, task_processes, wait_gone, write_options)
from tests.e2e.test_jobs import PSS

LONG = {"env": ["TRAIN_STEPS=2000", "CHECKPOINT_EVERY=100"]}
# Enough for a kill at step 300 at the latest where the job cannot end without what the test
# checks (the parameter server, the chief, the scheduler's adoption) or the relaunch is decided at
# once (a worker): a thousand steps fewer to train than LONG, about 6 s of CPU each.
KILLED = {"env": ["TRAIN_STEPS=1000", "CHECKPOINT_EVERY=100"]}


def kill_task(service: str, role: str, index: int, executor: bool = False) -> int:
    # Polled: on a loaded machine a PSS chief trains with the workers that are up, so its line can
    # come before a slow worker's process is found (seen once on real Mesos, two suites side by side).
    proc = eventually(lambda: find_task_process(service, role, index, executor=executor), 60,
                      f"a process for {role}:{index} of {service}")
    proc.send_signal(signal.SIGKILL)
    return proc.pid


def _run(tmp_path, master, opts):
    return run_scheduler(opts, "--master", master.address, "--state-dir", str(tmp_path / "state"))


def run_and_kill(tmp_path, master, opts, after: str, role: str, index: int, timeout: float = 400) -> str:
    """The job of ``opts`` run to a successful end, its ``role:index`` killed with -9 once the
    console shows ``after``: the console's output."""
    service = json.loads(opts.read_text())["service"]["name"]
    run = _run(tmp_path, master, opts)
    try:
        run.wait_for(after, 300)
        kill_task(service, role, index)
        assert run.wait(timeout) == 0, run.output[-4000:]
    finally:
        run.killpg()
    return run.output


# The scenarios below run against any master (``address``, ``state()``): the embedded one here, a
# real Apache Mesos in test_recovery_real_mesos.py.

def run_killed_worker(tmp_path, master) -> None:
    """kill -9 of a worker's process: it alone is relaunched, and the job succeeds."""
    opts = write_options(tmp_path / "o.json", PSS, service={"name": "kill-worker"}, job=KILLED)
    out = run_and_kill(tmp_path, master, opts, r"chief:0 \| step 200 ", "worker", 1, timeout=300)
    assert accuracy(out) >= 0.9
    assert re.search(r"worker:1 TASK_FAILED.*exit code 137|worker:1 TASK_FAILED", out)
    assert "worker:1 TASK_FAILED" in out and "relaunch #1" in out
    assert re.search(r"worker:1 +127\.0\.0\.1:\d+ +TASK_KILLED +restarts 1", out), "the summary shows the relaunch"
    ids = task_ids(master.state(), "kill-worker")
    assert len(ids) == len(set(ids)) == 5, ids
    assert not wait_gone("kill-worker")


def run_killed_ps(tmp_path, master) -> None:
    """kill -9 of the parameter server: the whole job restarts from its checkpoint and succeeds."""
    opts = write_options(tmp_path / "o.json", PSS, service={"name": "kill-ps"},
                         job={**KILLED, "checkpoint_dir": str(tmp_path / "checkpoints")})  # the agents share this disk
    out = run_and_kill(tmp_path, master, opts, r"chief:0 \| step 300 ", "ps", 0)
    assert "with the whole job from its checkpoint" in out
    m = re.search(r"chief:0 \| resumed from step (\d+)", out)
    assert m and int(m.group(1)) >= 300, "training resumed where the checkpoint was, not from zero"
    assert accuracy(out) >= 0.9
    ids = task_ids(master.state(), "kill-ps")
    assert len(ids) == len(set(ids)), ids
    assert not wait_gone("kill-ps")


@pytest.fixture
def master(tmp_path):
    m = LocalMaster(tmp_path / "master")
    yield m
    m.stop()


def test_killed_worker_is_relaunched_and_the_job_succeeds(tmp_path, master):
    run_killed_worker(tmp_path, master)


def test_killed_parameter_server_restarts_the_job_from_its_checkpoint(tmp_path, master):
    run_killed_ps(tmp_path, master)


def test_killed_executor_takes_its_task_down_and_the_task_is_relaunched(tmp_path):
    # The chief, done training, waits for a gate the test opens once the relaunched chief has
    # resumed: the job cannot end before the kill however loaded the machine, and the relaunch
    # trains from the checkpoint to 600 steps, not 1000 (400 after the kill's step: the chief's
    # python still runs when its executor is killed, which the check below needs).
    gate = tmp_path / "resumed"
    opts = write_options(tmp_path / "o.json", PSS, service={"name": "kill-exec"},
                         job={"command": '$TFMESOS_PYTHON train.py && while [ ! -e "$GATE" ]; do sleep 0.5; done',
                              "env": ["TRAIN_STEPS=600", "CHECKPOINT_EVERY=100", f"GATE={gate}"]})
    run = run_scheduler(opts)
    try:
        run.wait_for(r"chief:0 \| step 200 ", 180)
        chief = find_task_process("kill-exec", "chief", 0)
        assert chief is not None
        kill_task("kill-exec", "chief", 0, executor=True)
        # The chief's python runs under `sh -c`: it must still die with its executor (the agent
        # destroys the container's whole session), not linger as an orphan.
        chief.wait(timeout=30)
        run.wait_for(r"chief:0 \| resumed from step", 180)
        gate.touch()
        assert run.wait(300) == 0, run.output[-4000:]
    finally:
        run.killpg()
    out = run.output
    assert "chief:0 TASK_FAILED (REASON_EXECUTOR_TERMINATED)" in out
    assert re.search(r"chief:0 \| resumed from step [1-9]", out)
    assert accuracy(out) >= 0.9
    assert not wait_gone("kill-exec")


def run_scheduler_killed(tmp_path, master) -> None:
    """kill -9 of `tfmesos run`: a second one adopts the running tasks and finishes the job."""
    opts = write_options(tmp_path / "o.json", PSS, service={"name": "failover"}, job=KILLED)
    args = ["--master", master.address, "--state-dir", str(tmp_path / "state")]
    first = killed_scheduler(opts, args, r"chief:0 \| step 100 ", 180)
    assert find_task_process("failover", "chief", 0) is not None, "the job runs on while no scheduler is there"
    second = run_scheduler(opts, *args)
    try:
        assert second.wait(300) == 0, second.output[-4000:]
    finally:
        second.killpg()
    launched_first = re.findall(r"launch \S+ as (\S+)", first.output)
    launched_second = re.findall(r"launch \S+ as (\S+)", second.output)
    assert len(launched_first) == 4
    assert launched_second == [], "the restarted scheduler adopted the running tasks"
    fid = re.search(r"registered as framework (\S+)", first.output).group(1)
    assert f"resuming job 'failover' as framework {fid}" in second.output
    assert "final test accuracy" in second.output or "chief:0 TASK_FINISHED" in second.output
    ids = task_ids(master.state(), "failover")
    assert len(ids) == len(set(ids)) == 4, "no task id launched twice"
    assert not wait_gone("failover")
    assert not (tmp_path / "state" / "failover.json").exists(), "the finished job's state is cleared"


def test_scheduler_killed_and_restarted_finishes_the_job_without_relaunching(tmp_path, master):
    run_scheduler_killed(tmp_path, master)


def test_a_recorded_framework_that_mesos_removed_is_started_afresh(tmp_path):
    """The scheduler killed and its failover_timeout past: Mesos removed the framework (its tasks
    with it). Started again on the same state, tfmesos run hears "Framework has been removed",
    says so, forgets the record and runs the job anew, once."""
    master = LocalMaster(tmp_path / "m")
    opts = write_options(tmp_path / "o.json", service={"name": "forgotten", "failover_timeout": 1},
                         job={"command": "sleep 2"}, roles={"worker": {"count": 1, "cpus": 0.2, "mem": 128}},
                         policies={"success": "all_workers"})
    state = ["--master", master.address, "--state-dir", str(tmp_path / "state")]
    first = run_scheduler(opts, *state)
    second = None
    try:
        first.wait_for(r"worker:0 TASK_RUNNING", 60)
        first.kill()
        first.wait(30)
        eventually(lambda: any(f["name"] == "forgotten" for f in master.state()["completed_frameworks"]), 30,
                   "the master removing the framework after its failover_timeout")
        second = run_scheduler(opts, *state)
        assert second.wait(120) == 0, second.output[-3000:]
    finally:
        for run in (first, second):
            if run is not None:
                run.killpg()
        master.stop()
    out = second.output
    assert "resuming job 'forgotten' as framework" in out
    assert "Mesos no longer knows the recorded framework: starting the job afresh" in out
    assert len(re.findall(r"launch worker:0 as", out)) == 1, out[-3000:]


def test_two_jobs_competing_for_a_cluster_that_fits_one_do_not_deadlock(tmp_path):
    # Two agents of 2.5 cpus; each job needs 4 tasks of 1.2 cpus (executor included): both agents
    # whole. If each job sat on the offer of one agent, neither could ever start.
    master = LocalMaster(tmp_path / "m", agents=2, extra=["--cpus", "2.5"])
    runs = []
    try:
        for name in ("gang-a", "gang-b"):
            opts = write_options(
                tmp_path / f"{name}.json",
                service={"name": name},
                job={"command": "sleep 2"},
                roles={"worker": {"count": 4, "cpus": 1.1, "mem": 256}},
                policies={"success": "all_workers", "placement_timeout_seconds": 120},
            )
            runs.append(run_scheduler(opts, "--master", master.address))
        codes = [r.wait(180) for r in runs]
    finally:
        for r in runs:
            r.killpg()
        master.stop()
    assert codes == [0, 0], "\n\n".join(r.output[-2000:] for r in runs)
    for r in runs:
        assert len(re.findall(r"launch worker:\d as", r.output)) == 4, "each job started whole, exactly once"


def test_agent_lost_worker_moves_and_every_live_executor_gets_the_new_clusterspec(tmp_path):
    import json
    import urllib.request

    # Agents of 0.7 cpus hold one task each, so worker:1 is alone on its agent; a fifth is spare.
    # The chief, done training, waits for a gate the test opens once it has restarted for the moved
    # worker: the job runs until then however loaded the machine, with no margin of steps.
    master = LocalMaster(tmp_path / "m", agents=5, extra=["--cpus", "0.7"])
    gate = tmp_path / "chief-restarted"
    opts = write_options(tmp_path / "o.json", PSS, service={"name": "agent-gone"},
                         job={"command": '$TFMESOS_PYTHON train.py && while [ ! -e "$GATE" ]; do sleep 0.5; done',
                              "env": ["TRAIN_STEPS=400", "CHECKPOINT_EVERY=100", f"GATE={gate}"]})
    run = run_scheduler(opts, "--master", master.address)
    try:
        run.wait_for(r"chief:0 \| step 200 ", 180)
        old = re.search(r"launch worker:1 as \S+ on (\S+)", run.output).group(1)
        ps = find_task_process("agent-gone", "ps", 0)
        spec_file = ps.environ()["TFMESOS_CLUSTERSPEC_FILE"]
        assert json.loads(open(spec_file).read())["version"] == 1
        tasks = [t for f in master.state()["frameworks"] for t in f["tasks"]]
        agent = next(t["slave_id"] for t in tasks if t["name"].endswith("/job:worker/task:1") and t["state"] == "TASK_RUNNING")
        body = json.dumps({"type": "MARK_AGENT_GONE", "mark_agent_gone": {"agent_id": {"value": agent}}}).encode()
        req = urllib.request.Request(f"http://{master.address}/api/v1", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            assert resp.status == 200
        run.wait_for(r"launch worker:1 as \S+ on \S+", 60)
        run.wait_for(r"chief:0: restarting from its checkpoint because a worker moved", 120)
        gate.touch()
        assert run.wait(300) == 0, run.output[-4000:]
    finally:
        run.killpg()
        master.stop()
    out = run.output
    assert "worker:1 TASK_LOST (REASON_AGENT_REMOVED)" in out
    new = re.findall(r"launch worker:1 as \S+ on (\S+)", out)[-1]
    assert new != old, "relaunched away from the lost agent"
    spec = json.loads(open(spec_file).read())
    assert spec["version"] == 2 and spec["cluster"]["worker"][1] == new, "the ps executor got the new ClusterSpec"
    # A small gang: each executor took the ClusterSpec from its TaskInfo (none asked), those of the
    # relaunched worker and of the chief restarted for its move carrying the version the move made.
    took = sorted(m for p in (tmp_path / "m").rglob("stderr") if "agent-gone" in str(p)
                  for m in re.findall(r"took the ClusterSpec \(version (\d)\) in the TaskInfo", p.read_text()))
    assert took == ["1"] * 4 + ["2"] * 2, took
    assert "chief:0: restarting from its checkpoint because a worker moved to a new address" in out
    assert accuracy(out) >= 0.9


PSS_TASKS = [("ps", 0), ("worker", 0), ("worker", 1), ("chief", 0)]


def task_ids(state: dict, name: str) -> list[str]:
    """Every task id the master knows for the framework ``name`` (live and completed)."""
    return [t["id"] for f in state.get("frameworks", []) + state.get("completed_frameworks", []) if f["name"] == name
            for t in f.get("tasks", []) + f.get("completed_tasks", [])]


def task_states(state: dict, name: str) -> dict[str, str]:
    """Task id -> its latest state, for every task the master knows of the framework ``name``."""
    return {t["id"]: t["state"] for f in state.get("frameworks", []) + state.get("completed_frameworks", [])
            if f["name"] == name for t in f.get("tasks", []) + f.get("completed_tasks", [])}


def run_agent_restart_keeps_the_job(tmp_path, cluster) -> None:
    """The agent is SIGKILLed mid-training and started again with recovery (``cluster.restart_agent``):
    every executor re-subscribes within the agent's re-registration timeout, so no task is lost or
    relaunched, the very same task processes go on, and the job succeeds."""
    name = "agent-restart"
    opts = write_options(tmp_path / "o.json", PSS, service={"name": name}, job=LONG)
    run = run_scheduler(opts, "--master", cluster.address, "--state-dir", str(tmp_path / "state"))
    try:
        run.wait_for(r"chief:0 \| step 200 ", 180)
        pids = {key: find_task_process(name, *key).pid for key in PSS_TASKS}
        cluster.restart_agent()
        run.wait_for(r"chief:0 \| step 1\d00 ", 180)  # well past the agent's 2 s re-registration timeout
        assert {key: find_task_process(name, *key).pid for key in PSS_TASKS} == pids, "the same processes go on"
        assert run.wait(300) == 0, run.output[-4000:]
    finally:
        run.killpg()
    out = run.output
    assert not re.search(r"TASK_LOST|TASK_FAILED|TASK_GONE|TASK_UNREACHABLE|relaunch|from its checkpoint", out), out[-4000:]
    assert len(re.findall(r"launch \S+ as \S+", out)) == 4, "each task launched once"
    assert "resumed from step" not in out
    assert accuracy(out) >= 0.9
    ids = task_ids(cluster.state(), name)
    assert len(ids) == len(set(ids)) == 4, ids
    assert not wait_gone(name)


class RestartableLocalMaster:
    """An embedded master whose agents restart as a real agent does: its process SIGKILLed (the
    executors live on in their own sessions) and started again on the same work dir and port,
    where it recovers its agents and waits Mesos' 2 s for their executors to re-subscribe."""

    def __init__(self, work_dir, agents: int = 2) -> None:
        self._args = (work_dir, agents, ["--port", str(free_port())])
        self.master = LocalMaster(*self._args)
        self.address = self.master.address

    def state(self) -> dict:
        return self.master.state()

    def restart_agent(self) -> None:
        self.master.kill(signal.SIGKILL)
        self.master.wait(10)
        self.master = LocalMaster(*self._args)
        assert self.master.address == self.address

    def stop(self) -> None:
        self.master.stop()


def run_agent_lost_then_back(tmp_path, cluster) -> None:
    """The agent running the chief stops answering (``cluster.stop_agent``; the master pings every
    1 s, 3 misses): its tasks are TASK_LOST and the job carries on on the other agent. Back
    (``cluster.continue_agent``), the agent re-registers and the master says its old tasks are
    running (trace 12); the framework is not PARTITION_AWARE and kills them: no stale process, no
    second live copy of a task, no task id twice, and the job succeeds."""
    name = "agent-lost"
    opts = write_options(tmp_path / "o.json", PSS, service={"name": name},
                         job={**LONG, "checkpoint_dir": str(tmp_path / "checkpoints")})
    run = run_scheduler(opts, "--master", cluster.address, "--state-dir", str(tmp_path / "state"))
    try:
        run.wait_for(r"chief:0 \| step 200 ", 180)
        tasks = [t for f in cluster.state()["frameworks"] for t in f["tasks"] if t["state"] == "TASK_RUNNING"]
        agent_id = next(t["slave_id"] for t in tasks if t["name"].endswith("/job:chief/task:0"))
        index = int(agent_id.rsplit("-S", 1)[1])
        stranded = [p for p in task_processes(name) if cluster.runs_on(p, index)]
        assert stranded, "the chief's agent runs processes of the job"
        old_ids = [t["id"] for t in tasks if t["slave_id"] == agent_id]
        cluster.stop_agent(index)
        run.wait_for(r"chief:0 TASK_LOST", 60)
        run.wait_for(r"launch chief:0 as \S+ on \S+", 120)
        assert all(p.is_running() for p in stranded), "a stopped agent's tasks run on until it is back"
        cluster.continue_agent(index)
        _, alive = psutil.wait_procs(stranded, timeout=60)
        assert not [p for p in alive if p.status() != psutil.STATUS_ZOMBIE], "the old tasks were killed on return"
        eventually(lambda: _one_copy_each(name), 60, "one live process per task")
        assert run.wait(400) == 0, run.output[-4000:]
        ids = task_ids(cluster.state(), name)
        assert len(ids) == len(set(ids)), ids
        ends = task_states(cluster.state(), name)
        assert {ends[i] for i in old_ids} == {"TASK_KILLED"}, "killed once back, not left to end on their own"
        assert not wait_gone(name)
    finally:
        run.killpg()
    assert accuracy(run.output) >= 0.9
    assert "chief:0 TASK_LOST (REASON_AGENT_REMOVED)" in run.output


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


class StoppableLocalMaster:
    """An embedded master (in this process) whose agents stop as a SIGSTOPped mesos-agent does
    (``LocalMaster.pause_agent``), pinged every 1 s and unreachable after 3 misses, like the real
    cluster of test_recovery_real_mesos.py."""

    def __init__(self, work_dir, agents: int = 2) -> None:
        self.master = EmbeddedMaster(agents=agents, work_dir=work_dir, ports_per_agent=100,
                                     first_port=free_port_block(100 * agents),
                                     tuning=Tuning(agent_ping_timeout=1.0, max_agent_ping_timeouts=3)).start()
        self.address = self.master.address

    def state(self) -> dict:
        return self.master.state()

    def stop_agent(self, index: int) -> None:
        self.master.pause_agent(index)

    def continue_agent(self, index: int) -> None:
        self.master.resume_agent(index)

    def runs_on(self, proc: psutil.Process, index: int) -> bool:
        agent_id = next(s["id"] for s in self.state()["slaves"] if s["id"].endswith(f"-S{index}"))
        try:
            return proc.environ().get("MESOS_SANDBOX", "").startswith(str(self.master.work_dir / "agents" / agent_id) + "/")
        except psutil.Error:
            return False

    def stop(self) -> None:
        self.master.stop()


@pytest.mark.parametrize("cluster_class, scenario", [
    (StoppableLocalMaster, run_agent_lost_then_back),
    (RestartableLocalMaster, run_agent_restart_keeps_the_job),
], ids=["agent_lost_then_back_leaves_no_stale_process", "agent_restart_with_recovery_loses_no_task"])
def test_agent_scenario_on_the_embedded_master(tmp_path, cluster_class, scenario):
    cluster = cluster_class(tmp_path / "m")
    try:
        scenario(tmp_path, cluster)
    finally:
        cluster.stop()


def test_asks_for_the_clusterspec_lost_while_no_scheduler_is_there_are_asked_again(tmp_path, master):
    """Framework messages are best effort: the executors start (5 s late, through job.python) after
    the scheduler that launched them was killed, so the master drops their asks for the ClusterSpec
    (no framework connected). They ask again; the restarted scheduler answers and the job ends
    without a relaunch. A gang this small carries the ClusterSpec in its TaskInfos: the executors
    are told to ask anyway (ASK_ENV, as a protocol 4 executor before that did; a gang that asks
    by itself is 129 tasks)."""
    late = tmp_path / "late-python"
    late.write_text(f"#!/bin/sh\nsleep 5\nexport {ASK_ENV}=1\nexec {sys.executable} \"$@\"\n")
    late.chmod(0o755)
    opts = write_options(tmp_path / "o.json", service={"name": "lost-asks"},
                         job={"command": "exit 0", "python": str(late)},
                         roles={"worker": {"count": 2, "cpus": 0.2, "mem": 128, "restart_policy": "Never"}},
                         policies={"success": "all_workers"})
    args = ["--master", master.address, "--state-dir", str(tmp_path / "state")]
    first = run_scheduler(opts, *args)
    try:
        eventually(lambda: len(task_ids(master.state(), "lost-asks")) == 2, 60, "both tasks launched at the master")
    finally:
        first.kill(signal.SIGKILL)
        first.wait(30)
    assert "TASK_RUNNING" not in first.output, "killed before any executor could ask"
    asked_again = lambda: [p for p in master.work_dir.rglob("stderr")  # noqa: E731
                           if "lost-asks" in str(p) and "asking again" in p.read_text()]
    eventually(lambda: len(asked_again()) == 2, 60, "both executors asking again, their first asks lost")
    second = run_scheduler(opts, *args)
    try:
        assert second.wait(120) == 0, second.output[-4000:]
    finally:
        second.killpg()
    assert re.findall(r"launch \S+ as", second.output) == [], "the restarted scheduler relaunched nothing"
    assert "job lost-asks SUCCEEDED: all 2 workers finished" in second.output, second.output[-3000:]
    assert not wait_gone("lost-asks")
