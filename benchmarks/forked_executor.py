"""A forked executor's whole life, as the embedded agent's zygote forks it: its CPU and page faults.

A big gang on the embedded master runs one executor per task, each forked from the zygote
(``localmesos/agent/zygote.py``), which has imported ``tfmesos.executor.preload`` and frozen its
objects. What each such executor costs is copy-on-write as much as code: every page of the
zygote it writes to (a reference count will do) is copied. This measures that life alone, away
from the master and the scheduler: this process imports what the zygote imports and freezes it,
then forks children that run ``python -m tfmesos.executor`` through the zygote's own ``_run``,
against a stand-in agent on a socket in this process (a thread: not in the child, which a fork
copies with the calling thread alone). The agent answers SUBSCRIBE with SUBSCRIBED and a LAUNCH
whose TaskInfo carries no ClusterSpec (a gang of more than 128 tasks: the executor asks for it),
answers the ask with the ClusterSpec, and acknowledges every update; the task is ``exec sleep
0.02``. The child's CPU (user + sys, its task's included) and minor faults come from ``wait4``.

``python -m benchmarks.forked_executor [LIVES]`` prints the medians (the first two lives left
out). ``SANDBOXES=DIR``: where the sandboxes go (the disk's cost per inode shows in the figures:
``scale.inode_cpu_us``).
"""
from __future__ import annotations

import gc
import json
import os
import socket
import statistics
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from localmesos.agent import zygote
from localmesos.agent.sandbox import executor_environment
from tfmesos.core.actions import TaskLaunch
from tfmesos.core.spec import JobSpec, Resources, RoleSpec, ServiceSpec, TaskKey
from tfmesos.core.tensorflow.profile import TENSORFLOW
from tfmesos.mesos.messages import ClusterSpecMessage, encode
from tfmesos.mesos.taskinfo import task_payload

FRAMEWORK, EXECUTOR, AGENT = "bench-fw-0000", "bench.worker.0.1", "bench-S0"
MODULE = "tfmesos.executor"


def _record(event: dict[str, Any]) -> bytes:
    data = json.dumps(event).encode()
    return b"%d\n%s" % (len(data), data)


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _events() -> tuple[bytes, bytes]:
    """(SUBSCRIBED and the LAUNCH, as one chunk; the ClusterSpec as a framework message)."""
    spec = JobSpec(service=ServiceSpec(name="bench"),
                   roles=(RoleSpec("worker", 1, Resources(cpus=0.1, mem=32), "exec sleep 0.02"),), streamed=(),
                   profile=TENSORFLOW)
    launch = TaskLaunch(TaskKey("worker", 0), EXECUTOR, 31000, Resources(cpus=0.1, mem=32), 0)
    task = {"name": EXECUTOR, "task_id": {"value": EXECUTOR}, "agent_id": {"value": AGENT},
            "data": encode(task_payload(spec, launch, sys.executable))}
    subscribed = {"type": "SUBSCRIBED", "subscribed": {
        "executor_info": {"executor_id": {"value": EXECUTOR}, "framework_id": {"value": FRAMEWORK},
                          "command": {"value": f"{sys.executable} -m {MODULE}"}},
        "framework_info": {"id": {"value": FRAMEWORK}, "user": "", "name": "bench", "checkpoint": True},
        "agent_info": {"id": {"value": AGENT}, "hostname": "127.0.0.1"}}}
    answer = {"type": "MESSAGE", "message": {"data": encode(ClusterSpecMessage.of(1, {"worker": ["127.0.0.1:31000"]}))}}
    return (_chunk(_record(subscribed) + _record({"type": "LAUNCH", "launch": {"task": task}})),
            _chunk(_record(answer)))


class StandInAgent:
    """The executor API of one agent, for one executor at a time: SUBSCRIBE gets the task, a
    MESSAGE (the ask) the ClusterSpec, an UPDATE its acknowledgement, all on the event stream."""

    def __init__(self) -> None:
        self.head, self.answer = _events()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.endpoint = "127.0.0.1:%d" % self.sock.getsockname()[1]
        self.stream: socket.socket | None = None
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            conn, _ = self.sock.accept()
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        while True:
            head = [reader.readline()]
            while head[-1] not in (b"\r\n", b""):
                head.append(reader.readline())
            if head[-1] == b"":
                conn.close()
                return
            length = next(int(h.split(b":")[1]) for h in head if h.lower().startswith(b"content-length"))
            body = json.loads(reader.read(length))
            with self.lock:
                if body["type"] == "SUBSCRIBE":
                    self.stream = conn
                    conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + self.head)
                    continue
                conn.sendall(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
                assert self.stream is not None
                if body["type"] == "MESSAGE":
                    self.stream.sendall(self.answer)
                elif body["type"] == "UPDATE":
                    status = body["update"]["status"]
                    self.stream.sendall(_chunk(_record({"type": "ACKNOWLEDGED", "acknowledged": {
                        "task_id": status["task_id"], "uuid": status["uuid"]}})))


def one_life(agent: StandInAgent, sandbox: Path) -> tuple[float, float, int]:
    """(user ms, sys ms, minor faults) of one forked executor's life, its task's included."""
    sandbox.mkdir()
    env = executor_environment(agent_endpoint=agent.endpoint, agent_id=AGENT, agent_pid=f"slave(1)@{agent.endpoint}",
                               framework_id=FRAMEWORK, executor_id=EXECUTOR, directory=sandbox, checkpoint=True,
                               shutdown_grace_period=5.0, gpus=None, command=None)
    env["LOCALMESOS_AGENT_PROCESS"] = str(os.getpid())  # as the embedded agent sets it
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    pid = os.fork()
    if pid == 0:  # what zygote._become sets up, then zygote._run
        code = 127
        try:
            os.setpgid(0, 0)
            os.chdir(sandbox)
            for fd, name in ((1, "stdout"), (2, "stderr")):
                os.dup2(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644), fd)
            os.environ.clear()
            os.environ.update(env)
            sys.path.insert(0, str(sandbox))
            code = zygote._run(MODULE, [])
        finally:
            os._exit(code)
    _, status, usage = os.wait4(pid, 0)
    if status != 0:
        raise RuntimeError(f"the executor ended with {status}: " + (sandbox / "stderr").read_text()[-2000:])
    return usage.ru_utime * 1e3, usage.ru_stime * 1e3, usage.ru_minflt


def run(lives: int, where: Path) -> dict[str, Any]:
    import tfmesos.executor  # noqa: F401 - the zygote's imports
    import tfmesos.executor.preload  # noqa: F401

    agent = StandInAgent()
    zygote._MAIN_CODE[MODULE] = zygote._main_code(MODULE)
    gc.collect()
    gc.freeze()
    tmp = Path(tempfile.mkdtemp(prefix="forked-executor-", dir=where))
    try:
        samples = [one_life(agent, tmp / str(i)) for i in range(lives)][2:]
    finally:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return {"lives": len(samples), "user_ms": statistics.median(s[0] for s in samples),
            "sys_ms": statistics.median(s[1] for s in samples),
            "cpu_ms": statistics.median(s[0] + s[1] for s in samples),
            "minor_faults": statistics.median(s[2] for s in samples)}


if __name__ == "__main__":
    result = run(int(sys.argv[1]) if len(sys.argv) > 1 else 30, Path(os.environ.get("SANDBOXES") or tempfile.gettempdir()))
    print(json.dumps(result))
