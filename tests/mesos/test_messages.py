"""The scheduler <-> executor contract (tfmesos/mesos/messages.py): every message survives the
wire, and a peer of another protocol is refused naming both versions."""
from __future__ import annotations

import base64
import json
import sys
import threading

import pytest

from tests.e2e.harness import eventually

from tfmesos.core.task_state import TaskState
from tfmesos.executor.executor import TFExecutor
from tfmesos.mesos import messages as m
from tfmesos.mesos.messages import PROTOCOL, ProtocolMismatch, decode, encode

EXAMPLES = [
    m.TaskPayload(role="worker", index=1, port=31001, restarts=2, command="python train.py", env={"A": "b"},
                  workdir="/w", checkpoint_dir="/c", python="/usr/bin/python3", service="digits", stream_output=False),
    m.TaskPayload(role="ps", index=0, port=31000, restarts=0, command=None, env={}, workdir="", checkpoint_dir="",
                  python="python3", service="digits", stream_output=True),
    m.ClusterSpecMessage.of(3, {"ps": ["h:1"], "worker": ["h:2", "h:3"]}),
    m.TaskPayload(role="ps", index=0, port=31000, restarts=0, command=None, env={}, workdir="", checkpoint_dir="",
                  python="python3", service="digits", stream_output=False,
                  spec_version=3, cluster_z=m.ClusterSpecMessage.of(3, {"ps": ["h:1"]}).cluster_z),
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
WIRE_FIELDS = {4: {
    "task": ["role", "index", "port", "restarts", "command", "env", "workdir", "checkpoint_dir", "python", "service",
             "stream_output", "secret_env", "secret_files",
             "spec_version", "cluster_z"],  # optional: an executor of 4 before them ignores them and asks
    "clusterspec": ["version", "cluster_z"],
    "need_spec": ["task_id"],
    "output": ["task_id", "lines", "offset"],  # offset: optional (an older peer drops or omits it)
    "progress": ["task_id", "values"],
    "result": ["exit_code", "log_tail", "extra", "exception"],
    "stop_notice": ["task_id", "reason", "kind"],  # new: an older executor refuses the kind, its task goes on
}}


def test_the_wire_field_names_are_this_protocols() -> None:
    assert PROTOCOL in WIRE_FIELDS, f"protocol {PROTOCOL} has no entry in WIRE_FIELDS"
    assert {kind: list(cls.FIELDS) for kind, cls in m._KINDS.items()} == WIRE_FIELDS[PROTOCOL]


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
    ({"v": PROTOCOL, "type": "clusterspec", "version": 1}, "lacks cluster_z"),
    ([1, 2], "must be a JSON object"),
])
def test_malformed_messages_are_refused(obj, says) -> None:
    with pytest.raises(ValueError, match=says):
        decode(_raw(obj))


class _Driver:
    def __init__(self) -> None:
        self.updates: list[dict] = []
        self.messages: list[m.Message] = []

    def sendStatusUpdate(self, status: dict) -> None:  # noqa: N802 (pymesos API)
        self.updates.append(status)

    def sendFrameworkMessage(self, data: str) -> None:  # noqa: N802 (pymesos API)
        self.messages.append(decode(data))


def test_a_clusterspec_message_is_deflated_and_refused_plainly_when_it_is_not_one() -> None:
    cluster = {"ps": [f"agent-{i}.example:{31000 + i}" for i in range(2)],
               "worker": [f"agent-{i % 3}.example:{32000 + i}" for i in range(1000)]}
    message = m.ClusterSpecMessage.of(7, cluster)
    assert decode(encode(message)).cluster() == cluster
    assert len(encode(message)) < len(json.dumps(cluster)) / 4, "a gang's addresses deflate well"
    with pytest.raises(ValueError, match="cluster_z is not a deflated ClusterSpec"):
        m.ClusterSpecMessage(7, "bm90IGRlZmxhdGVk").cluster()
    with pytest.raises(ValueError, match="no {job: \\[host:port"):
        m.ClusterSpecMessage.of(7, {"worker": "h:1"}).cluster()  # type: ignore[dict-item]


@pytest.mark.parametrize("theirs", [PROTOCOL - 1, PROTOCOL + 1])
def test_a_scheduler_and_an_executor_of_neighbouring_protocols_refuse_each_other_naming_both(theirs) -> None:
    """Protocol 3's TaskInfo carried the ClusterSpec (spec_version, cluster); an executor of 3 given
    a TaskInfo of 4 waits for nothing: it fails the task naming both, and so does one of 4 given 3's."""
    driver, executor = _Driver(), TFExecutor()
    old = m.to_wire(EXAMPLES[0]) | {"v": theirs, "spec_version": 1, "cluster": {"worker": ["h:1"]}}
    executor.launchTask(driver, {"task_id": {"value": "digits.worker.1.1"}, "data": _raw(old)})
    (update,) = driver.updates
    assert update["state"] == "TASK_FAILED" and not driver.messages
    said = update["message"]
    assert f"speaks tfmesos protocol {theirs}" in said and f"this tfmesos speaks protocol {PROTOCOL}" in said, said


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


def _payload(**changes) -> m.TaskPayload:
    base = dict(role="worker", index=0, port=0, restarts=0, command="true", env={}, workdir="", checkpoint_dir="",
                python=sys.executable, service="digits", stream_output=False)
    return m.TaskPayload(**(base | changes))


def test_an_executor_asks_for_the_clusterspec_at_once_and_starts_its_task_when_it_arrives(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("MESOS_SANDBOX", str(tmp_path))
    driver, executor = _Driver(), TFExecutor()
    executor.launchTask(driver, {"task_id": {"value": "digits.worker.0.1"}, "data": encode(_payload())})
    eventually(lambda: driver.messages, 10, "the executor to ask for the ClusterSpec")
    assert driver.messages == [m.NeedSpec("digits.worker.0.1")]
    assert not driver.updates and executor.process is None, "no TASK_STARTING, no task before its ClusterSpec"
    executor.frameworkMessage(driver, encode(m.ClusterSpecMessage.of(4, {"worker": ["127.0.0.1:1"]})))
    assert executor.finished.wait(30)
    spec = json.loads((tmp_path / "clusterspec.json").read_text())
    assert (spec["version"], spec["cluster"]) == (4, {"worker": ["127.0.0.1:1"]})
    assert [u["state"] for u in driver.updates] == ["TASK_RUNNING", "TASK_FINISHED"]


def test_a_small_gangs_taskinfo_carries_the_clusterspec_the_executor_starts_without_asking(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("MESOS_SANDBOX", str(tmp_path))
    cluster = {"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]}
    carried = m.ClusterSpecMessage.of(5, cluster)
    payload = decode(encode(_payload(spec_version=5, cluster_z=carried.cluster_z)))
    assert payload.cluster_spec() == carried
    driver, executor = _Driver(), TFExecutor()
    executor.launchTask(driver, {"task_id": {"value": "digits.worker.0.1"}, "data": encode(payload)})
    assert executor.finished.wait(30)
    assert driver.messages == [], "no NeedSpec: the TaskInfo had it"
    assert [u["state"] for u in driver.updates] == ["TASK_RUNNING", "TASK_FINISHED"]
    spec = json.loads((tmp_path / "clusterspec.json").read_text())
    assert (spec["version"], spec["cluster"]) == (5, cluster)


@pytest.mark.parametrize("why", ["ask_env", "unreadable"])
def test_an_executor_asks_when_told_to_or_when_the_carried_clusterspec_is_unreadable(tmp_path, monkeypatch, why) -> None:
    from tfmesos.executor import executor as ex

    monkeypatch.setenv("MESOS_SANDBOX", str(tmp_path))
    if why == "ask_env":
        monkeypatch.setenv(ex.ASK_ENV, "1")  # what a protocol 4 executor before the fields did
        cluster_z = m.ClusterSpecMessage.of(1, {"worker": ["127.0.0.1:1"]}).cluster_z
    else:
        cluster_z = "bm90IGRlZmxhdGVk"
    driver, executor = _Driver(), TFExecutor()
    executor.launchTask(driver, {"task_id": {"value": "digits.worker.0.1"},
                                 "data": encode(_payload(spec_version=1, cluster_z=cluster_z))})
    eventually(lambda: driver.messages, 10, "the executor to ask for the ClusterSpec")
    assert driver.messages[0] == m.NeedSpec("digits.worker.0.1") and executor.process is None
    executor.frameworkMessage(driver, encode(m.ClusterSpecMessage.of(2, {"worker": ["127.0.0.1:1"]})))
    assert executor.finished.wait(30)
    assert json.loads((tmp_path / "clusterspec.json").read_text())["version"] == 2


def test_a_payload_without_the_carried_clusterspec_still_reads() -> None:
    """A scheduler of protocol 4 before spec_version/cluster_z: its executors ask, as they did."""
    wire = m.to_wire(EXAMPLES[0])
    del wire["spec_version"], wire["cluster_z"]
    payload = m.from_wire(wire)
    assert payload == EXAMPLES[0] and payload.cluster_spec() is None


def test_an_executor_whose_answer_was_lost_asks_again_until_one_arrives(tmp_path, monkeypatch) -> None:
    """Framework messages are best effort on real Mesos: an ask or its answer may be lost."""
    from tfmesos.executor import executor as ex

    monkeypatch.setenv("MESOS_SANDBOX", str(tmp_path))
    monkeypatch.setattr(ex, "ASK_AGAIN_SECONDS", 0.05)
    driver, executor = _Driver(), TFExecutor()
    executor.launchTask(driver, {"task_id": {"value": "digits.worker.0.1"}, "data": encode(_payload())})
    eventually(lambda: len(driver.messages) >= 3, 10, "the executor to ask again while no answer came")
    assert executor.process is None and not driver.updates
    executor.frameworkMessage(driver, encode(m.ClusterSpecMessage.of(1, {"worker": ["127.0.0.1:1"]})))
    assert executor.finished.wait(30)
    for asker in [t for t in threading.enumerate() if t.name == "tfmesos-executor-ask-spec"]:
        asker.join(5)
        assert not asker.is_alive(), "no more asks once it has the ClusterSpec"
    assert set(driver.messages) == {m.NeedSpec("digits.worker.0.1")}


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
    """An executor of another protocol refuses the TaskInfo: its TASK_FAILED carries its result in
    its own protocol, and that mismatch stops the job (under ExitCode an end without an
    exit code was retried, each relaunch meeting the same executor)."""
    sched, driver, task_id = _launched_worker({"count": 1, "restart_policy": "ExitCode"})
    # What an executor of the next protocol sends: its own TASK_FAILED, its result in its protocol.
    result = {"v": PROTOCOL + 1, "type": "result", "exit_code": None, "log_tail": "protocol"}
    sched.mesos.statusUpdate(driver, {"task_id": {"value": task_id}, "agent_id": {"value": "A1"}, "state": "TASK_FAILED",
                                      "message": "tfmesos executor: ...", "data": _raw(result)})
    snap = sched.job.snapshot()
    assert snap.phase in ("FAILED", "FINISHING") and f"speaks tfmesos protocol {PROTOCOL + 1}" in snap.cause, snap.cause
    assert sched.job.tasks[next(iter(sched.job.tasks))].restarts == 0
