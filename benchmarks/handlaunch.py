"""The physical limit for bring-up and training: the job's processes started by hand.

Same processes as under tfmesos (``python -m tfmesos.task.tfserver`` for the parameter server and the
workers, ``/bin/sh -c "$TFMESOS_PYTHON train.py"`` for the chief), same ports (those the
scheduler picked), same working directory, same environment: the environment is built by the
executor's own code (``TFExecutor._environment`` on top of the embedded agent's
``executor_environment``), the TaskInfo payload by ``task_payload``, the ClusterSpec by
``cluster_spec``. No Mesos, no scheduler, no executor process: a plain launcher that starts the
four processes back to back and reads their stdout.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any
from unittest import mock

from tfmesos.client.cli import load_job
from tfmesos.core.actions import TaskLaunch
from tfmesos.core.tensorflow.clusterspec import cluster_spec, substitute_placeholders
from tfmesos.executor.executor import TFExecutor, _die_with_parent, command_argv
from localmesos.agent.sandbox import executor_environment
from tfmesos.mesos.taskinfo import task_payload
from tfmesos.core.spec import TaskKey

from benchmarks.common import PYTHON, BenchError


class HandTask:
    def __init__(self, key: TaskKey, argv: list[str], env: dict[str, str], cwd: str, sandbox: Path,
                 own_session: bool = False):
        self.key = key
        self.lines: list[tuple[float, str]] = []
        self._cond = threading.Condition()
        self.stderr = open(sandbox / "stderr", "ab")
        self.proc = subprocess.Popen(
            argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.stderr,
            # own_session: a session of its own, as every Mesos container (and executor) has; with the
            # kernel's autogroup scheduling, each session is then scheduled as a group of its own.
            start_new_session=own_session, process_group=None if own_session else 0, preexec_fn=_die_with_parent,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in iter(self.proc.stdout.readline, b""):
            now = time.time()
            with self._cond:
                self.lines.append((now, raw.decode("utf-8", "replace").rstrip("\n")))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def find(self, pattern: str, timeout: float) -> tuple[float, Any]:
        import re

        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for ts, line in self.lines:
                    m = rx.search(line)
                    if m:
                        return ts, m
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._reader.is_alive()):
                    raise BenchError(f"hand-launched {self.key}: no line matching {pattern!r} (exit "
                                     f"{self.proc.poll()}); stdout: " + " | ".join(l for _, l in self.lines[-5:])
                                     + "; stderr: " + self.stderr_tail())
                self._cond.wait(min(left, 1.0))

    def stderr_tail(self, size: int = 1500) -> str:
        try:
            with open(self.stderr.name, "rb") as f:
                f.seek(0, 2)
                f.seek(max(0, f.tell() - size))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self, timeout: float = 30.0) -> int:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            code = self.proc.wait(10)
        self._reader.join(5)
        self.stderr.close()
        return code


class HandJob:
    """The job's tasks started directly, in the scheduler's launch order."""

    def __init__(self, options_path: Path, ports: dict[str, int], work_dir: Path, own_sessions: bool = False):
        _, spec = load_job(argparse.Namespace(options=str(options_path), options_from_env=False))
        if not spec.checkpoint_dir:  # as tfmesos.scheduler.runner does on the embedded master
            spec = dataclasses.replace(spec, checkpoint_dir=str(work_dir / "checkpoints" / spec.service.name))
        keys = spec.task_keys()
        missing = [str(k) for k in keys if str(k) not in ports]
        if missing:
            raise BenchError(f"no port for {missing}")
        cluster = cluster_spec({k: f"127.0.0.1:{ports[str(k)]}" for k in keys})
        order = sorted(keys, key=lambda k: ports[str(k)])  # the scheduler's launch order
        self.spec = spec
        self.tasks: dict[str, HandTask] = {}
        prepared = []
        for seq, key in enumerate(order, 1):
            role = spec.role(key.role)
            assert role is not None
            task_id = f"{spec.service.name}.{key.role}.{key.index}.{seq}"
            payload = task_payload(spec, TaskLaunch(key, task_id, ports[str(key)], role.demand, 0), PYTHON)
            sandbox = work_dir / "sandboxes" / task_id
            sandbox.mkdir(parents=True)
            base = executor_environment(
                agent_endpoint="127.0.0.1:5051", agent_id="hand-S0", agent_pid="slave(1)@127.0.0.1:5051",
                framework_id="hand-0000", executor_id=task_id, directory=sandbox, checkpoint=True,
                shutdown_grace_period=5.0, gpus=None, command=None)
            # The executor is a Python started without a locale: its locale coercion (PEP 538) puts
            # LC_CTYPE=C.UTF-8 in its environment, which its tasks inherit.
            base.setdefault("LC_CTYPE", "C.UTF-8")
            executor = TFExecutor()
            executor.payload = payload
            with mock.patch.dict(os.environ, base, clear=True):
                env = executor._environment(key, cluster, str(sandbox))
            if payload.command is None:
                argv = [payload.python, "-m", "tfmesos.task.tfserver"]
            else:  # as the executor runs it: sh -c, or the words where the shell would only exec them
                argv = command_argv(substitute_placeholders(payload.command, cluster, key))
            prepared.append((key, argv, env, payload.workdir or str(sandbox), sandbox))
        self.started_at = time.time()
        for key, argv, env, cwd, sandbox in prepared:
            self.tasks[str(key)] = HandTask(key, argv, env, cwd, sandbox, own_sessions)

    def stop(self) -> dict[str, int]:
        return {name: t.stop() for name, t in self.tasks.items()}


def probe_tfserver(work_dir: Path, timeout: float = 300.0) -> float:
    """Seconds for one ``python -m tfmesos.task.tfserver`` started by hand to print ``serving on``.

    Run while a job trains, this is the physical limit for a relaunched server under the same
    CPU contention: one TensorFlow process starting next to a busy job on the same cores.
    """
    import json
    import socket

    with socket.socket() as sock:  # a free port for a one-task cluster of its own
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    sandbox = work_dir / f"probe-{port}"
    sandbox.mkdir(parents=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONUNBUFFERED": "1", "TF_CPP_MIN_LOG_LEVEL": "2",
           "TMPDIR": str(sandbox), "TF_CONFIG": json.dumps({"cluster": {"worker": [f"127.0.0.1:{port}"]},
                                                            "task": {"type": "worker", "index": 0}})}
    task = HandTask(TaskKey("worker", 0), [PYTHON, "-m", "tfmesos.task.tfserver"], env, str(sandbox), sandbox)
    t0 = time.time()
    try:
        return task.find(r"serving on", timeout)[0] - t0
    finally:
        task.stop()
