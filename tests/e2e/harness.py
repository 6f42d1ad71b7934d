"""Real processes for end-to-end tests and the chaos suite: a ``tfmesos local-master`` and
``tfmesos run`` schedulers, each its own process, and helpers to find and kill task processes.
"""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[2]
TFMESOS = [sys.executable, "-m", "tfmesos.client.cli"]


class LineProcess:
    """A subprocess whose combined output is collected line by line and can be waited on."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None, cwd: Path = ROOT):
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self.proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, text=True, bufsize=1,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def wait_for(self, pattern: str, timeout: float) -> re.Match:
        """Block until a line matches (or the process ends / time runs out: AssertionError)."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        seen = 0
        with self._cond:
            while True:
                for line in self.lines[seen:]:
                    m = rx.search(line)
                    if m:
                        return m
                seen = len(self.lines)
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._reader.is_alive()):
                    raise AssertionError(f"no line matching {pattern!r}; output:\n" + "\n".join(self.lines[-60:]))
                self._cond.wait(left)

    def wait(self, timeout: float) -> int:
        code = self.proc.wait(timeout)
        self._reader.join(5)
        return code

    @property
    def output(self) -> str:
        with self._cond:
            return "\n".join(self.lines)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)

    def killpg(self, sig: int = signal.SIGKILL) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass


class LocalMaster(LineProcess):
    def __init__(self, work_dir: Path, agents: int = 2, extra: list[str] | None = None):
        self.work_dir = work_dir
        super().__init__(TFMESOS + ["local-master", "--port", "0", "--agents", str(agents),
                                    "--first-port", "0", "--ports-per-agent", "100",
                                    "--work-dir", str(work_dir)] + (extra or []))
        self.address = self.wait_for(r"listening on (\S+)", 30).group(1)

    def state(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"http://{self.address}/state", timeout=10) as resp:
            return json.load(resp)

    def stop(self) -> None:
        self.kill(signal.SIGTERM)
        try:
            self.wait(30)
        except subprocess.TimeoutExpired:
            self.killpg(signal.SIGKILL)
            self.wait(10)


def free_ports(count: int) -> list[int]:
    """Ports the kernel hands out for port 0; all are held at once so they differ."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def free_port() -> int:
    """A port the kernel hands out for port 0."""
    return free_ports(1)[0]


def stop_scheduler(run: LineProcess) -> None:
    """After a test, pass or fail: a scheduler still running is stopped (SIGTERM kills its
    tasks), then whatever is left of its process group."""
    if run.proc.poll() is None:
        run.kill(signal.SIGTERM)
        try:
            run.wait(60)
        except subprocess.TimeoutExpired:
            pass
    run.killpg()


def run_scheduler(options: Path, *args: str, env: dict[str, str] | None = None) -> LineProcess:
    return LineProcess(TFMESOS + ["run", str(options), *args], env=env)


def killed_scheduler(options: Path, args: list[str], pattern: str, timeout: float) -> LineProcess:
    """A ``tfmesos run`` killed -9 once a line of it matches ``pattern`` (and if none does in time)."""
    run = run_scheduler(options, *args)
    try:
        run.wait_for(pattern, timeout)
    finally:
        run.kill(signal.SIGKILL)
        run.wait(30)
    return run


def write_options(path: Path, base: Path | None = None, **overrides: Any) -> Path:
    """An options file: an example's (with its workdir made absolute) plus overrides, deep-merged."""
    from tfmesos.options.load import deep_merge

    options: dict[str, Any] = {}
    if base is not None:
        options = json.loads(base.read_text())
        options.setdefault("job", {})["workdir"] = str(base.parent)
    options = deep_merge(options, overrides)
    path.write_text(json.dumps(options, indent=1))
    return path


# The folder of this test run (tests/conftest.py): its masters' sandboxes are in it.
RUN_ROOT = os.environ.get("TFMESOS_TEST_ROOT", "")


def this_runs(env: dict[str, str]) -> bool:
    """Whether a job's process belongs to this test run: its sandbox is in the run's folder. A
    sandbox that is a folder of this machine elsewhere is another run's (the same job names run in
    another checkout's suite); a container's (a path inside the container) is kept."""
    sandbox = env.get("MESOS_SANDBOX", "")
    return not RUN_ROOT or not sandbox or sandbox.startswith(RUN_ROOT + os.sep) or not os.path.isdir(sandbox)


def task_processes(service: str) -> list[psutil.Process]:
    """Every process started for a job's tasks (executors and what they run) by this test run,
    found by environment."""
    found = []
    for p in psutil.process_iter(["pid"]):
        try:
            env = p.environ()
        except (psutil.Error, OSError):
            continue
        if (env.get("TFMESOS_SERVICE") == service or env.get("MESOS_EXECUTOR_ID", "").startswith(service + ".")) \
                and this_runs(env):
            found.append(p)
    return found


def find_task_process(service: str, role: str, index: int, executor: bool = False) -> psutil.Process | None:
    """The task's own process (the python, not an ``sh -c`` around it), or its executor."""
    for p in task_processes(service):
        try:
            env, cmd = p.environ(), p.cmdline()
        except psutil.Error:
            continue
        if executor:
            if "tfmesos.executor" in cmd and env.get("MESOS_EXECUTOR_ID", "").startswith(f"{service}.{role}.{index}."):
                return p
        elif env.get("TFMESOS_JOB_NAME") == role and env.get("TFMESOS_TASK_INDEX") == str(index) and cmd[:1] != ["/bin/sh"]:
            return p
    return None


def wait_gone(service: str, timeout: float = 30.0) -> list[psutil.Process]:
    """Processes of the job still alive after ``timeout`` (they end asynchronously)."""
    _, alive = psutil.wait_procs(task_processes(service), timeout=timeout)
    return [p for p in alive if p.status() != psutil.STATUS_ZOMBIE]


def eventually(probe, timeout: float, what: str):
    """The probe's first truthy value, polled until the deadline (errors count as not yet)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = probe()
        except (OSError, ValueError, KeyError):
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def accuracy(output: str) -> float:
    m = re.search(r"final test accuracy: ([0-9.]+)", output)
    assert m, "no accuracy in the output:\n" + output[-3000:]
    return float(m.group(1))
