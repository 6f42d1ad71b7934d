"""recovery.py's decisions on their own: what a container's record holds, and what a restarted
agent does with each recorded container (real processes, real files; no master)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from localmesos.agent.containers import AgentTask, Executor, ExecutorState
from localmesos.agent.procs import ManagedProcess, spawn
from localmesos.agent.recovery import (
    RECORD_FILE_MAX_BYTES,
    checkpoint_container,
    container_path,
    load_containers,
    record_container,
    recover_containers,
    reregistration_termination,
)

AGENT = "agent-S0"
FRAMEWORK = {"id": {"value": "fw-1"}, "name": "f", "checkpoint": True}


@pytest.fixture
def sleepers(tmp_path):
    """Spawn container processes (``sleep``) in their sandboxes; all are killed afterwards."""
    started: list[ManagedProcess] = []

    def start(name: str) -> ManagedProcess:
        sandbox = tmp_path / "sandboxes" / name
        sandbox.mkdir(parents=True)
        process = spawn(["sleep", "60"], {"MESOS_DIRECTORY": str(sandbox), "PATH": "/usr/bin:/bin"}, sandbox)
        started.append(process)
        return process

    yield start
    for process in started:
        assert process.popen is not None
        if process.popen.poll() is None:
            process.popen.kill()
        process.popen.wait(10)


def executor(process: ManagedProcess | None, *, container_id: str = "c-1", command_task: bool = False,
             checkpoint: bool = True) -> Executor:
    info = {"executor_id": {"value": "e-1"}, "framework_id": FRAMEWORK["id"]}
    made = Executor(framework_id="fw-1", executor_id="e-1", container_id=container_id, info=info,
                    directory=Path(process.directory if process else "/nowhere"), checkpoint=checkpoint,
                    command_task=command_task, shutdown_grace_period=5.0, process=process)
    made.gpus = [1]
    made.launched["t-1"] = AgentTask({"task_id": {"value": "t-1"}, "name": "t"}, "TASK_RUNNING")
    made.launched["t-2"] = AgentTask({"task_id": {"value": "t-2"}, "name": "t"}, "TASK_FINISHED")
    return made


def test_record_holds_who_started_which_process_and_the_live_tasks(tmp_path, sleepers):
    process = sleepers("a")
    running = executor(process)
    record_container(tmp_path, AGENT, running, FRAMEWORK)
    assert running.checkpoint_path == container_path(tmp_path, AGENT, "c-1")
    ((path, record),) = load_containers(tmp_path, AGENT)
    assert path == running.checkpoint_path
    assert (record["pid"], record["recoverable"], record["gpus"], record["framework_info"]) == (
        process.pid, True, [1], FRAMEWORK)
    assert [(t["info"]["task_id"]["value"], t["state"]) for t in record["tasks"]] == [("t-1", "TASK_RUNNING")]


def test_unspawned_and_terminated_containers_leave_no_record(tmp_path, sleepers):
    record_container(tmp_path, AGENT, executor(None), FRAMEWORK)
    ended = executor(sleepers("a"))
    ended.state = ExecutorState.TERMINATED
    record_container(tmp_path, AGENT, ended, FRAMEWORK)
    assert load_containers(tmp_path, AGENT) == []


def test_recoverable_container_is_adopted_with_its_tasks(tmp_path, sleepers):
    process = sleepers("a")
    record_container(tmp_path, AGENT, executor(process), FRAMEWORK)
    (adopted,) = recover_containers(tmp_path, AGENT)
    assert adopted.framework_info == FRAMEWORK
    assert adopted.tasks == [({"task_id": {"value": "t-1"}, "name": "t"}, "TASK_RUNNING")]
    again = adopted.executor
    assert (again.container_id, again.state, again.gpus, again.ever_sent_task, list(again.launched)) == (
        "c-1", ExecutorState.REGISTERING, [1], True, ["t-1"])
    assert again.process is not None and again.process.pid == process.pid
    assert process.popen is not None and process.popen.poll() is None, "an adopted container keeps running"
    assert again.checkpoint_path is not None and again.checkpoint_path.exists()


@pytest.mark.parametrize("why", ["command task", "no checkpointing"])
def test_unrecoverable_container_is_killed_and_forgotten(tmp_path, sleepers, why):
    process = sleepers("a")
    command_task = why == "command task"
    record_container(tmp_path, AGENT, executor(process, command_task=command_task, checkpoint=command_task),
                     FRAMEWORK)
    assert recover_containers(tmp_path, AGENT) == []
    assert process.popen is not None and process.popen.wait(10) == -9
    assert load_containers(tmp_path, AGENT) == []


def test_gone_or_recycled_process_only_loses_its_record(tmp_path, sleepers):
    gone = sleepers("gone")
    record_container(tmp_path, AGENT, executor(gone, container_id="c-gone"), FRAMEWORK)
    assert gone.popen is not None
    gone.popen.kill()
    gone.popen.wait(10)
    other = sleepers("other")  # a live pid whose start time is not the recorded one: a recycled pid
    path = container_path(tmp_path, AGENT, "c-recycled")
    path.write_text(json.dumps({"pid": other.pid, "start_time": 1.0, "recoverable": True}))
    assert recover_containers(tmp_path, AGENT) == []
    assert load_containers(tmp_path, AGENT) == []
    assert other.popen is not None and other.popen.poll() is None, "a recycled pid is not ours to kill"


def test_reregistration_timeout_names_the_state_by_partition_awareness():
    lost = reregistration_termination(False, 30.0)
    gone = reregistration_termination(True, 2.0)
    assert (lost.state, lost.reason, lost.message) == (
        "TASK_LOST", "REASON_EXECUTOR_REREGISTRATION_TIMEOUT", "Executor did not reregister within 30secs")
    assert (gone.state, gone.message) == ("TASK_GONE", "Executor did not reregister within 2secs")


def test_unreadable_record_is_dropped(tmp_path):
    path = container_path(tmp_path, AGENT, "c-bad")
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert recover_containers(tmp_path, AGENT) == []
    assert not path.exists()


def test_a_record_is_appended_and_the_newest_whole_one_is_read(tmp_path, sleepers):
    # One file per container for its whole life (no file made and removed per update), the last whole
    # line current: a line torn by a crash leaves the one before it.
    running = executor(sleepers("a"))
    record_container(tmp_path, AGENT, running, FRAMEWORK)
    path = running.checkpoint_path
    assert path is not None and path.stat().st_mode & 0o777 == 0o600
    inode = path.stat().st_ino
    running.launched["t-1"].state = "TASK_FINISHED"
    record_container(tmp_path, AGENT, running, FRAMEWORK)
    assert path.stat().st_ino == inode and len(path.read_text().splitlines()) == 2
    assert load_containers(tmp_path, AGENT)[0][1]["tasks"] == []
    with open(path, "a") as f:
        f.write('{"pid": 1, "tasks": [{"info"')  # torn
    ((_, record),) = load_containers(tmp_path, AGENT)
    assert record["pid"] == running.process.pid and record["tasks"] == []  # type: ignore[union-attr]


def test_a_file_grown_past_its_bound_is_rewritten_with_the_newest_record(tmp_path):
    path = container_path(tmp_path, AGENT, "c-1")
    for n in range(RECORD_FILE_MAX_BYTES // 1000 + 2):
        checkpoint_container(path, {"n": n, "pad": "x" * 1000})
    lines = path.read_text().splitlines()
    assert path.stat().st_size <= RECORD_FILE_MAX_BYTES and json.loads(lines[-1])["n"] == n
    assert len(lines) < RECORD_FILE_MAX_BYTES // 1000
