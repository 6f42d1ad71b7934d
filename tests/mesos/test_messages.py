"""The scheduler <-> executor contract (tfmesos/mesos/messages.py): every message survives the
wire, and a peer of another protocol is refused naming both versions."""
from __future__ import annotations

import base64
import dataclasses
import json
import sys

import pytest

from tfmesos.core.task_state import TaskState
from tfmesos.executor.executor import TFExecutor
from tfmesos.mesos import messages as m
from tfmesos.mesos.messages import PROTOCOL, ProtocolMismatch, decode, encode

EXAMPLES = [
    m.TaskPayload(role="worker", index=1, port=31001, restarts=2, command="python train.py", env={"A": "b"},
                  workdir="/w", checkpoint_dir="/c", python="/usr/bin/python3", service="digits", stream_output=False),
    m.TaskPayload(role="ps", index=0, port=31000, restarts=0, command=None, env={}, workdir="", checkpoint_dir="",
                  python="python3", service="digits", stream_output=True),
    m.TaskPayload(role="worker", index=0, port=31002, restarts=0, command=None, env={}, workdir="", checkpoint_dir="",
                  python="python3", service="digits", stream_output=False, spec_version=2,
                  cluster={"ps": ["h:1"], "worker": ["h:2"]}),
    m.ClusterSpecMessage(version=3, cluster={"ps": ["h:1"], "worker": ["h:2", "h:3"]}),
    m.NeedSpec(task_id="digits.worker.1.7"),
    m.OutputLines(task_id="digits.chief.0.1", lines=["step 1", "üñíçødé"]),
    m.Progress(task_id="digits.chief.0.1", values={"step": 10, "loss": 0.5, "total_steps": 100}),
    m.TaskResult(exit_code=137, log_tail="Killed", extra={}),
    m.TaskResult(exit_code=None),
    m.StopNotice(task_id="digits.worker.1.7", reason="agent h1 draining", kind="drain"),
    m.TaskResult(exit_code=1, log_tail="}) with an unsupported type", exception="ValueError: Attempt to convert a value"),
]


@pytest.mark.parametrize("message", EXAMPLES, ids=lambda x: type(x).__name__)
def test_every_message_round_trips_and_carries_the_protocol(message) -> None:
    data = encode(message)
    assert decode(data) == message
    assert json.loads(base64.b64decode(data))["v"] == PROTOCOL


# Every message's field names under this PROTOCOL: renaming, removing or adding a required field
# changes what an older peer reads, so it needs a new PROTOCOL (and this table).
WIRE_FIELDS = {3: {
    "task": ["role", "index", "port", "restarts", "command", "env", "workdir", "checkpoint_dir", "python", "service",
             "stream_output", "spec_version", "cluster", "secret_env", "secret_files"],
    "clusterspec": ["version", "cluster"],
    "need_spec": ["task_id"],
    "output": ["task_id", "lines", "offset"],  # offset: optional (an older peer drops or omits it)
    "progress": ["task_id", "values"],
    "result": ["exit_code", "log_tail", "extra", "exception"],
    "stop_notice": ["task_id", "reason", "kind"],  # new: an older executor refuses the kind, its task goes on
}}


def test_the_wire_field_names_are_this_protocols() -> None:
    assert PROTOCOL in WIRE_FIELDS, f"protocol {PROTOCOL} has no entry in WIRE_FIELDS"
    assert {kind: [f.name for f in dataclasses.fields(cls)] for kind, cls in m._KINDS.items()} == WIRE_FIELDS[PROTOCOL]


def test_a_payload_names_the_service_it_belongs_to() -> None:
    wire = m.to_wire(EXAMPLES[0])
    assert wire["service"] == "digits" and "job" not in wire  # "job" (protocol 1) held the service's name


def _raw(obj: dict) -> str:
    return base64.b64encode(json.dumps(obj).encode()).decode()


@pytest.mark.parametrize("version", [PROTOCOL + 1, None])
def test_another_protocol_is_refused_naming_both(version) -> None:
    obj = {"type": "need_spec", "task_id": "t"} | ({} if version is None else {"v": version})
    with pytest.raises(ProtocolMismatch) as err:
        decode(_raw(obj), "the scheduler")
    said = str(err.value)
    assert f"this tfmesos speaks protocol {PROTOCOL}" in said
    assert (f"protocol {version}" if version else "protocol 0 (before versioning)") in said


@pytest.mark.parametrize("obj, says", [
    ({"v": PROTOCOL, "type": "nonsense"}, "unknown tfmesos message type"),
    ({"v": PROTOCOL, "type": "clusterspec", "version": 1}, "lacks cluster"),
    ([1, 2], "must be a JSON object"),
])
def test_malformed_messages_are_refused(obj, says) -> None:
    with pytest.raises(ValueError, match=says):
        decode(_raw(obj))


class _Driver:
    def __init__(self) -> None:
        self.updates: list[dict] = []

    def sendStatusUpdate(self, status: dict) -> None:  # noqa: N802 (pymesos API)
        self.updates.append(status)


def test_an_executor_given_another_protocol_fails_its_task_naming_both_versions() -> None:
    driver, executor = _Driver(), TFExecutor()
    payload = m.to_wire(EXAMPLES[0]) | {"v": PROTOCOL + 5}
    executor.launchTask(driver, {"task_id": {"value": "digits.worker.1.1"}, "data": _raw(payload)})
    assert [u["state"] for u in driver.updates] == ["TASK_FAILED"]
    message = driver.updates[0]["message"]
    assert f"protocol {PROTOCOL + 5}" in message and f"speaks protocol {PROTOCOL}" in message
    assert executor.finished.is_set() and executor.process is None


def test_a_terminal_update_carries_a_task_result() -> None:
    from tfmesos.executor.executor import _status
    from tfmesos.mesos.events import parse_status

    status = _status("digits.worker.1.1", "TASK_FAILED", "exited", {"exit_code": 3, "log_tail": "boom"})
    parsed = parse_status(status)
    assert (parsed.exit_code, parsed.log_tail) == (3, "boom")
    assert parsed.state is TaskState.TASK_FAILED, "parsed at the edge: the core sees the Enum"


def test_a_state_mesos_does_not_have_is_refused_at_the_edge_naming_it() -> None:
    from tfmesos.mesos.events import parse_status

    with pytest.raises(ValueError, match="TASK_SLEEPING"):
        parse_status({"task_id": {"value": "t.worker.0.1"}, "state": "TASK_SLEEPING"})


def test_a_gang_launched_executor_starts_its_task_from_the_spec_in_the_taskinfo(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("MESOS_SANDBOX", str(tmp_path))
    driver, executor = _Driver(), TFExecutor()
    payload = m.TaskPayload(role="worker", index=0, port=0, restarts=0, command="true", env={}, workdir="",
                            checkpoint_dir="", python=sys.executable, service="digits", stream_output=False,
                            spec_version=4, cluster={"worker": ["127.0.0.1:1"]})
    executor.launchTask(driver, {"task_id": {"value": "digits.worker.0.1"}, "data": encode(payload)})
    assert executor.finished.wait(30), "the task ran without any framework message"
    assert json.loads((tmp_path / "clusterspec.json").read_text())["version"] == 4
    states = [u["state"] for u in driver.updates]
    assert states == ["TASK_RUNNING", "TASK_FINISHED"], states  # nothing to wait for: no TASK_STARTING


class _SchedulerDriver:
    """Records the calls the scheduler makes (pymesos' driver needs a master)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple]] = []

    def __getattr__(self, name: str):
        return lambda *args, **kwargs: self.calls.append((name, args))


def _launched_worker(worker: dict) -> tuple:
    """A job of one worker (``worker``: its role options) whose task the scheduler has launched:
    (the job's shell, the driver double, the task id)."""
    from tfmesos.core.job.job import Job
    from tfmesos.mesos.taskinfo import ExecutorSettings
    from tfmesos.options.load import resolve_options
    from tfmesos.scheduler.job_shell import JobShell
    from tfmesos.store.job_store import JobStore
    from tfmesos.options.jobspec import job_spec_from_options

    options = resolve_options({"service": {"name": "pv"}, "job": {"command": "true"}, "roles": {"worker": worker}})
    sched = JobShell(Job.new(job_spec_from_options(options), 0.0), ExecutorSettings(python="python3"),
                     JobStore(None, options))
    driver = _SchedulerDriver()
    sched.mesos.registered(driver, {"value": "F-1"}, {"hostname": "m", "port": 5050})
    sched.mesos.resourceOffers(driver, [{"id": {"value": "O1"}, "agent_id": {"value": "A1"}, "hostname": "h1", "resources": [
        {"name": "cpus", "type": "SCALAR", "scalar": {"value": 4}},
        {"name": "mem", "type": "SCALAR", "scalar": {"value": 8192}},
        {"name": "ports", "type": "RANGES", "ranges": {"range": [{"begin": 31000, "end": 31010}]}}]}])
    (launch,) = [args for name, args in driver.calls if name == "launchTasks"]
    (task_id,) = [task["task_id"]["value"] for task in launch[1]]
    return sched, driver, task_id


def test_a_scheduler_told_by_an_executor_of_another_protocol_stops_the_job_naming_both() -> None:
    sched, driver, task_id = _launched_worker({"count": 1})
    # An executor of 0.1.0 (before versioning) asks for the ClusterSpec.
    sched.mesos.frameworkMessage(driver, {"value": task_id}, {"value": "A1"}, _raw({"type": "need_spec", "task_id": task_id}))
    assert ("killTask", ({"value": task_id},)) in [(n, a[:1]) for n, a in driver.calls]
    cause = sched.job.snapshot().cause
    assert "protocol 0 (before versioning)" in cause and f"speaks protocol {PROTOCOL}" in cause, cause


def test_a_task_failed_by_an_executor_of_another_protocol_stops_the_job_rather_than_relaunch() -> None:
    """A gang launch never takes the framework-message path: the executor's TASK_FAILED carries its
    result in its own protocol, and that mismatch stops the job (under ExitCode an end without an
    exit code was retried, each relaunch meeting the same executor)."""
    sched, driver, task_id = _launched_worker({"count": 1, "restart_policy": "ExitCode"})
    # What an executor of the next protocol sends: its own TASK_FAILED, its result in its protocol.
    result = {"v": PROTOCOL + 1, "type": "result", "exit_code": None, "log_tail": "protocol"}
    sched.mesos.statusUpdate(driver, {"task_id": {"value": task_id}, "agent_id": {"value": "A1"}, "state": "TASK_FAILED",
                                      "message": "tfmesos executor: ...", "data": _raw(result)})
    snap = sched.job.snapshot()
    assert snap.phase in ("FAILED", "FINISHING") and f"speaks tfmesos protocol {PROTOCOL + 1}" in snap.cause, snap.cause
    assert sched.job.tasks[next(iter(sched.job.tasks))].restarts == 0


def test_a_gangs_shared_clusterspec_is_encoded_once_and_a_new_one_is_never_served_stale() -> None:
    base = dict(role="worker", index=0, port=1, restarts=0, command=None, env={}, workdir="", checkpoint_dir="",
                python="p", service="j", stream_output=False)
    first = {"worker": ["h:1", "h:2"]}
    a = m.TaskPayload(**base, spec_version=1, cluster=first)
    b = m.TaskPayload(**(base | {"index": 1}), spec_version=1, cluster=first)
    assert decode(encode(a)) == a and decode(encode(b)) == b
    second = {"worker": ["h:1", "h:9"]}  # the next version: another object
    c = m.TaskPayload(**base, spec_version=2, cluster=second)
    assert decode(encode(c)).cluster == second
    assert decode(encode(m.TaskPayload(**base))).cluster is None
