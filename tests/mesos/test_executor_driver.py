"""The executor's own v1 driver against a scripted agent: the event stream (RecordIO records split
across chunks), the recovery rules (re-subscribing within the backoff with the unacknowledged
updates, refusals retried, no agent for MESOS_RECOVERY_TIMEOUT ends it, no checkpointing ends it at
once), and what a cold executor imports before it subscribes."""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tfmesos.mesos import executor_driver
from tfmesos.mesos.executor_driver import AGENT_PROCESS_ENV, RecoveringExecutorDriver, process_start

F, E = "F-0000", "E-1"
SUBSCRIBED = {"type": "SUBSCRIBED", "subscribed": {
    "executor_info": {"executor_id": {"value": E}}, "framework_info": {"id": {"value": F}},
    "agent_info": {"id": {"value": "S0"}}}}


def _records(*events: dict) -> bytes:
    return b"".join(b"%d\n%s" % (len(data), data) for data in (json.dumps(e).encode() for e in events))


def _chunks(data: bytes, size: int) -> bytes:
    """``data`` as HTTP chunks of ``size`` bytes: records cut at arbitrary places."""
    return b"".join(b"%x\r\n%s\r\n" % (len(data[i:i + size]), data[i:i + size]) for i in range(0, len(data), size))


class ScriptedAgent:
    """An agent's executor endpoint. Each SUBSCRIBE takes the next entry of ``script``: an HTTP
    status to refuse with, a list of events to stream (then the stream is closed, as an agent
    that goes away closes it), or None: the agent is gone for good; with no entries left the
    stream stays open. Calls are answered 202
    and kept in ``calls``, but for the first ``unanswered`` calls: read and kept, never answered
    (a starved agent); ``subscribes`` keeps each SUBSCRIBE body."""

    def __init__(self, script: list, unanswered: int = 0) -> None:
        self.script = list(script)
        self.unanswered = unanswered
        self.calls: list[dict] = []
        self.subscribes: list[dict] = []
        self.changed = threading.Condition()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.endpoint = "127.0.0.1:%d" % self.sock.getsockname()[1]
        self.open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        while True:
            try:
                head = [reader.readline()]
                while head[-1] not in (b"\r\n", b""):
                    head.append(reader.readline())
            except ConnectionResetError:  # the driver dropped its connection (to reconnect): as a close
                head = [b""]
            if head[-1] == b"":
                return conn.close()
            length = next(int(h.split(b":")[1]) for h in head if h.lower().startswith(b"content-length"))
            body = json.loads(reader.read(length))
            if body["type"] != "SUBSCRIBE":
                self._note(self.calls, body)  # before the answer: a caller that got it may look at once
                if self.unanswered:
                    self.unanswered -= 1
                    continue
                conn.sendall(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
                continue
            self._note(self.subscribes, body)
            step = self.script.pop(0) if self.script else []
            if step is None:
                # shutdown first: a close alone leaves the port listening while the accept thread
                # still blocks in accept() (it holds the socket), and the next SUBSCRIBE got in
                self.sock.shutdown(socket.SHUT_RDWR)
                self.sock.close()
                return conn.close()
            if isinstance(step, int):
                conn.sendall(b"HTTP/1.1 %d Nope\r\nContent-Length: 4\r\n\r\nnope" % step)
                return conn.close()
            conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + _chunks(_records(*step), 7))
            if self.script:  # more to come: this agent "restarts"
                conn.sendall(b"0\r\n\r\n")
                return conn.close()
            self.open.append(conn)

    def _note(self, where: list, body: dict) -> None:
        with self.changed:
            where.append(body)
            self.changed.notify_all()

    def wait(self, what, timeout: float = 10.0):
        deadline = time.monotonic() + timeout
        with self.changed:
            while not (found := what()):
                left = deadline - time.monotonic()
                assert left > 0, "the agent never saw it"
                self.changed.wait(left)
            return found

    def close(self) -> None:
        self.sock.close()
        for conn in self.open:
            conn.close()


class Recorder:
    """pymesos' Executor callbacks, recorded."""

    def __init__(self) -> None:
        self.seen: list[tuple] = []
        self.event = threading.Condition()

    def __getattr__(self, name: str):
        def callback(driver, *args):
            with self.event:
                self.seen.append((name, *args))
                self.event.notify_all()
        return callback

    def names(self) -> list[str]:
        return [s[0] for s in self.seen]


@pytest.fixture
def agent_env(monkeypatch):
    def start(script: list, unanswered: int = 0, **env: str) -> ScriptedAgent:
        agent = ScriptedAgent(script, unanswered)
        values = {"MESOS_AGENT_ENDPOINT": agent.endpoint, "MESOS_FRAMEWORK_ID": F, "MESOS_EXECUTOR_ID": E,
                  "MESOS_CHECKPOINT": "1", "MESOS_SUBSCRIPTION_BACKOFF_MAX": "50ms", "MESOS_LOCAL": "1", **env}
        for name, value in values.items():
            monkeypatch.setenv(name, value)
        started.append(agent)
        return agent

    started: list[ScriptedAgent] = []
    yield start
    for agent in started:
        agent.close()


def _wait(recorder: Recorder, names: list[str], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    with recorder.event:
        while recorder.names()[:len(names)] != names:
            assert time.monotonic() < deadline, recorder.names()
            recorder.event.wait(0.1)


def test_events_cut_across_chunks_reach_the_executor_in_order(agent_env):
    task = {"task_id": {"value": "t1"}, "data": "ZGF0YQ=="}
    agent_env([[SUBSCRIBED, {"type": "HEARTBEAT"}, {"type": "LAUNCH", "launch": {"task": task}},
                {"type": "MESSAGE", "message": {"data": "aGk="}}, {"type": "KILL", "kill": {"task_id": {"value": "t1"}}}]])
    recorder = Recorder()
    driver = RecoveringExecutorDriver(recorder)
    driver.start()
    try:
        _wait(recorder, ["registered", "launchTask", "frameworkMessage", "killTask"])
        assert recorder.seen[1] == ("launchTask", task)
        assert recorder.seen[2] == ("frameworkMessage", "aGk=")
        assert driver.tasks == {"t1": task}  # no update of it acknowledged yet
    finally:
        driver.stop()
        driver.join()


def test_updates_survive_an_agent_restart_and_go_with_the_next_subscribe(agent_env):
    """The agent closes the stream (it restarts) and refuses once while it recovers: the driver
    comes back within the backoff and SUBSCRIBE carries the task and the update it never
    acknowledged; an acknowledgement then clears both."""
    task = {"task_id": {"value": "t1"}}
    agent = agent_env([[SUBSCRIBED, {"type": "LAUNCH", "launch": {"task": task}}], 503, 404, [SUBSCRIBED]])
    recorder = Recorder()
    driver = RecoveringExecutorDriver(recorder)
    driver.start()
    try:
        _wait(recorder, ["registered", "launchTask"])
        driver.sendStatusUpdate({"task_id": {"value": "t1"}, "state": "TASK_RUNNING"})  # maybe sent, maybe kept
        started = time.monotonic()
        agent.wait(lambda: len(agent.subscribes) >= 4)
        assert time.monotonic() - started < 2.0  # three retries of at most 50 ms, not pymesos' 2 s doubling
        _wait(recorder, ["registered", "launchTask", "disconnected", "disconnected", "disconnected", "reregistered"])
        last = agent.subscribes[-1]["subscribe"]
        assert last["unacknowledged_tasks"] == [task]
        (update,) = last["unacknowledged_updates"]
        assert update["status"]["state"] == "TASK_RUNNING" and update["status"]["source"] == "SOURCE_EXECUTOR"
        assert driver.running
        agent.wait(lambda: agent.open)
        agent.open[-1].sendall(_chunks(_records({"type": "ACKNOWLEDGED", "acknowledged": {
            "task_id": {"value": "t1"}, "uuid": update["status"]["uuid"]}}), 5))
        assert driver.wait_acknowledged()
        assert driver.updates == {} and driver.tasks == {}
    finally:
        driver.stop()
        driver.join()


def test_calls_go_to_the_agent_while_subscribed(agent_env):
    agent = agent_env([])
    recorder = Recorder()
    driver = RecoveringExecutorDriver(recorder)
    driver.start()
    try:
        agent.wait(lambda: agent.subscribes)
        deadline = time.monotonic() + 10
        while not driver.connected:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        driver.sendFrameworkMessage("bWVzc2FnZQ==")
        driver.sendStatusUpdate({"task_id": {"value": "t1"}, "state": "TASK_FINISHED"})
        calls = agent.wait(lambda: len(agent.calls) >= 2 and agent.calls)
        assert [c["type"] for c in calls] == ["MESSAGE", "UPDATE"]
        assert calls[0]["message"] == {"data": "bWVzc2FnZQ=="} and calls[0]["executor_id"] == {"value": E}
        assert len(driver.updates) == 1  # until the agent acknowledges it
    finally:
        driver.stop()
        driver.join()


def test_an_update_the_agent_did_not_answer_in_time_is_sent_again_until_acknowledged(agent_env, monkeypatch):
    """A starved agent leaves an UPDATE call unanswered past the call's timeout while the stream
    stays up: the driver sends it again with the same uuid (the agent keeps one of the two) and
    keeps it until the agent acknowledges it; nothing is sent after that."""
    monkeypatch.setattr(executor_driver, "CALL_TIMEOUT", 0.3)
    monkeypatch.setattr(executor_driver, "UPDATE_RETRY_MIN", 0.2)
    agent = agent_env([[SUBSCRIBED]], unanswered=2)
    recorder = Recorder()
    driver = RecoveringExecutorDriver(recorder)
    driver.start()
    try:
        # Subscribed first: an update sent before is kept for the next SUBSCRIBE, not sent again.
        _wait(recorder, ["registered"])
        driver.sendStatusUpdate({"task_id": {"value": "t1"}, "state": "TASK_RUNNING"})
        first, second, third = agent.wait(lambda: len(agent.calls) >= 3 and agent.calls)
        assert first["update"]["status"]["uuid"] == second["update"]["status"]["uuid"] == third["update"]["status"]["uuid"]
        assert len(driver.updates) == 1
        agent.open[-1].sendall(_chunks(_records({"type": "ACKNOWLEDGED", "acknowledged": {
            "task_id": {"value": "t1"}, "uuid": first["update"]["status"]["uuid"]}}), 5))
        assert driver.wait_acknowledged()
        # the third call was answered: the update is not sent a fourth time
        driver.sendFrameworkMessage("bWFyaw==")
        calls = agent.wait(lambda: len(agent.calls) >= 4 and agent.calls)
        assert [c["type"] for c in calls] == ["UPDATE", "UPDATE", "UPDATE", "MESSAGE"]
    finally:
        driver.stop()
        driver.join()


def test_no_agent_for_the_recovery_timeout_shuts_the_executor_down(agent_env):
    agent_env([[SUBSCRIBED], 503, None], MESOS_RECOVERY_TIMEOUT="300ms")
    recorder = Recorder()
    driver = RecoveringExecutorDriver(recorder)
    started = time.monotonic()
    driver.start()
    driver.join()  # ends by itself
    assert recorder.names()[:2] == ["registered", "disconnected"] and recorder.names()[-1] == "shutdown"
    assert recorder.names().count("disconnected") >= 3  # it kept trying meanwhile
    assert 0.3 <= time.monotonic() - started < 5 and not driver.running


def test_without_checkpointing_a_lost_agent_ends_the_executor_at_once(agent_env):
    agent_env([[SUBSCRIBED], [SUBSCRIBED]], MESOS_CHECKPOINT="")
    recorder = Recorder()
    driver = RecoveringExecutorDriver(recorder)
    driver.start()
    driver.join()
    assert recorder.names() == ["registered", "disconnected", "shutdown"]


def test_a_shutdown_event_shuts_the_executor_down(agent_env):
    agent_env([[SUBSCRIBED, {"type": "SHUTDOWN"}]])
    recorder = Recorder()
    driver = RecoveringExecutorDriver(recorder)
    driver.start()
    driver.join()
    assert recorder.names() == ["registered", "shutdown"]


def test_a_cold_executor_imports_nothing_heavy_before_it_subscribes() -> None:
    """pymesos, http.client, logging, typing, dataclasses and subprocess cost a cold executor
    ~80 ms of CPU: none is imported before the task arrives (main() up to the SUBSCRIBE)."""
    probe = ("import sys, tfmesos.executor.__main__ as m, tfmesos.executor.executor as e; "
             "print(' '.join(sorted(sys.modules)))")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(Path(__file__).parents[2])}
    loaded = set(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env,
                                check=True).stdout.split())
    heavy = {"pymesos", "http.client", "email", "ssl", "logging", "typing", "dataclasses", "subprocess",
             "tfmesos.mesos.messages", "tfmesos.core.spec", "pathlib", "shutil", "uuid"} - _startup()
    assert not heavy & loaded, heavy & loaded


def test_a_running_executor_imports_no_typing_no_dataclasses_no_job_spec_no_idna() -> None:
    """What a task's start imports (its wire messages, the ClusterSpec code, the report pipe) and a
    connection to the agent, in a cold interpreter: no ``socket`` (``tcp.py``: its enum
    conversions are ~2 ms), no ``subprocess`` (the task is started with
    ``os.posix_spawn`` where it can be: ``SpawnedTask``), no ``typing`` (~4 ms and 0.6 MiB per executor),
    no ``dataclasses`` (with ``inspect``, ``ast``, ``dis``: ~1.5 MiB and 5-10 ms: the wire
    messages, ``TaskKey`` and the traceback reader are plain classes), no job spec or framework
    profile (the executor needs a TaskKey, not the job's), and no ``idna`` codec (getaddrinfo's for
    a str host: unicodedata and stringprep). Paid once per task."""
    probe = ("import _socket, sys, tfmesos.executor.executor as e, tfmesos.task.notice\n"
             "from tfmesos.mesos import tcp\n"
             "from tfmesos.mesos.calls_http import address\n"
             "e._import_task_start()\n"
             "server = _socket.socket(); server.bind(('127.0.0.1', 0)); server.listen(1)\n"
             "tcp.connect(address('127.0.0.1', server.getsockname()[1]), 5).close()\n"
             "print(' '.join(sorted(sys.modules)))")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(Path(__file__).parents[2])}
    loaded = set(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env,
                                check=True).stdout.split())
    assert {"tfmesos.mesos.messages", "tfmesos.core.tensorflow.clusterspec",
            "tfmesos.executor.report_pipe", "tfmesos.task.keras_check"} <= loaded  # the task's imports ran
    unwanted = {"socket", "subprocess", "typing", "dataclasses", "inspect", "ast", "base64", "tfmesos.core.spec",
                "tfmesos.core.profile", "tfmesos.core.tensorflow.tracebacks", "encodings.idna"} - _startup()
    assert not unwanted & loaded, unwanted & loaded


def test_a_forked_executor_imports_nothing_for_its_task() -> None:
    """The embedded agent's zygote imports ``tfmesos.executor.preload`` once and forks every executor
    from it: whatever a task's start still imports (importlib's search of every path entry, the
    module's code) is paid again by each executor of a gang, with the copy-on-write page faults of
    it (the Keras check and the notice module: ~3 ms and ~350 faults a task). Everything the task's
    start imports (``_import_task_start``'s list) is preloaded."""
    probe = ("import sys, tfmesos.executor.preload, tfmesos.executor.executor as e\n"
             "before = set(sys.modules)\n"
             "e._import_task_start()\n"
             "print(' '.join(sorted(set(sys.modules) - before)))")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(Path(__file__).parents[2])}
    after_fork = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env,
                                check=True).stdout.split()
    assert after_fork == []


def test_the_happy_paths_line_is_written_as_logging_writes_it_without_importing_logging() -> None:
    """``log.note`` (a small gang's executor says it took the ClusterSpec from its TaskInfo): the
    executor's log format, on stderr, with no ``logging`` import (~5 ms of a cold executor); the
    same line through logging once something imported it."""
    probe = ("import sys\n"
             "from tfmesos.mesos.executor_driver import LazyLogger\n"
             "log = LazyLogger('tfmesos.executor')\n"
             "log.configure(level='INFO', format='%(asctime)s tfmesos.executor %(levelname)s %(message)s')\n"
             "log.note('took the ClusterSpec (version %d) in the TaskInfo', 1)\n"
             "print('logging' in sys.modules)\n"
             "import logging\n"
             "log.note('took the ClusterSpec (version %d) in the TaskInfo', 2)\n")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(Path(__file__).parents[2])}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}"
    assert done.stdout.split() == ["False" if "logging" not in _startup() else "True"]
    lines = done.stderr.splitlines()
    assert len(lines) == 2, done.stderr
    for version, line in zip((1, 2), lines):
        assert re.fullmatch(stamp + f" tfmesos.executor INFO took the ClusterSpec \\(version {version}\\) in the TaskInfo",
                            line), line


def _startup() -> set[str]:
    """What the interpreter itself imports here (an editable install's finder imports pathlib)."""
    return set(subprocess.run([sys.executable, "-c", "import sys; print(' '.join(sys.modules))"], capture_output=True,
                              text=True, check=True).stdout.split())


class _KillsOnShutdown:
    """An executor whose task takes a moment to die on SHUTDOWN, then is reported killed, as
    TFExecutor's is (SIGTERM, the exit, TASK_KILLED), after which it stops the driver."""

    def __init__(self) -> None:
        self.driver = None

    def __getattr__(self, name: str):
        return lambda driver, *args: None

    def shutdown(self, driver) -> None:
        def task_ends() -> None:
            time.sleep(0.2)  # the task's own SIGTERM handling: the driver must still be there after it
            driver.sendStatusUpdate({"task_id": {"value": "T1"}, "state": "TASK_KILLED"})
            driver.stop()

        threading.Thread(target=task_ends, daemon=True).start()


def test_on_shutdown_the_task_s_end_still_reaches_the_agent(agent_env):
    """SHUTDOWN: the executor kills its task and reports TASK_KILLED; the driver stays for it (it
    aborted at once, the update was lost, and the agent then failed the task)."""
    agent = agent_env([[SUBSCRIBED, {"type": "SHUTDOWN"}]], MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD="30secs")
    driver = RecoveringExecutorDriver(_KillsOnShutdown())
    driver.start()
    driver.join()
    updates = [c["update"]["status"]["state"] for c in agent.calls if c["type"] == "UPDATE"]
    assert updates == ["TASK_KILLED"], agent.calls


def test_a_kill_hands_its_kill_policy_to_the_executor(agent_env):
    policy = {"grace_period": {"nanoseconds": 10_000_000_000}}
    agent_env([[SUBSCRIBED, {"type": "KILL", "kill": {"task_id": {"value": "T1"}, "kill_policy": policy}},
                {"type": "SHUTDOWN"}]])
    recorder = Recorder()
    driver = RecoveringExecutorDriver(recorder)
    driver.start()
    driver.join()
    assert ("killTask", {"value": "T1"}, policy) in recorder.seen, recorder.seen


def test_the_kill_grace_period_is_the_kill_policy_s() -> None:
    from tfmesos.executor.executor import KILL_GRACE_SECONDS, kill_grace

    assert kill_grace({"grace_period": {"nanoseconds": 10_000_000_000}}) == 10.0
    assert kill_grace({"grace_period": {"nanoseconds": 0}}) == 0.0
    assert kill_grace(None) == kill_grace({}) == KILL_GRACE_SECONDS


def test_where_no_agent_can_recover_it_the_executor_ends_as_soon_as_the_agent_s_process_is_gone(agent_env):
    """LOCALMESOS_AGENT_PROCESS (an embedded agent whose work dir goes with its process): its end
    shuts the executor down at once, not MESOS_RECOVERY_TIMEOUT (15 minutes) later."""
    agent_process = subprocess.Popen(["sleep", "60"])
    try:
        start = process_start(agent_process.pid)
        agent_env([[SUBSCRIBED], None], **{AGENT_PROCESS_ENV: f"{agent_process.pid} {start}"})
        recorder = Recorder()
        driver = RecoveringExecutorDriver(recorder)
        driver.start()
        _wait(recorder, ["registered", "disconnected"])  # the agent away: while its process runs, it may come back
        assert driver.running
        agent_process.kill()
        driver.join()  # ends by itself
        assert recorder.names()[-1] == "shutdown" and not driver.running
    finally:
        agent_process.kill()
        agent_process.wait()


def test_a_pid_that_is_another_process_by_now_is_no_agent_s(agent_env):
    agent_env([], **{AGENT_PROCESS_ENV: f"{os.getpid()} {process_start(os.getpid()) + 1}"})
    recorder = Recorder()
    driver = RecoveringExecutorDriver(recorder)
    driver.start()
    driver.join()
    assert recorder.names() == ["shutdown"]


def test_the_agent_names_its_process_as_the_executor_reads_it() -> None:
    from localmesos.agent import sandbox

    assert sandbox.AGENT_PROCESS_ENV == AGENT_PROCESS_ENV
    pid, start = sandbox.own_process().split()
    assert (int(pid), int(start)) == (os.getpid(), process_start(os.getpid()))
