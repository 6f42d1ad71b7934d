"""Runs the ParameterServerStrategy example by hand, without the scheduler.

The processes are started the way tfmesos starts them: the parameter server and the
workers run the built-in server (``python -m tfmesos.task.tfserver``), the chief runs the
command of ``examples/pss_digits/options.json`` through ``/bin/sh -c``, each with its
own TF_CONFIG, TFMESOS_* variables and TMPDIR, on free ports of 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil
import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "pss_digits"
CHIEF_TIMEOUT_S = 300
STOP_TIMEOUT_S = 15


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


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM every process group that is still there, SIGKILL after a grace period, reap."""
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def leftovers(pgids: set[int]) -> list[psutil.Process]:
    """Live processes still in one of the given process groups."""
    found = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) in pgids and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (ProcessLookupError, psutil.Error):
            pass
    return found


# Real TensorFlow processes (make test installs TensorFlow): an end-to-end test, never skipped.
@pytest.mark.e2e
def test_pss_digits_example_trains_with_builtin_servers() -> None:
    options = json.loads((EXAMPLE / "options.json").read_text())
    roles = options["roles"]
    counts = {job: roles[job]["count"] for job in ("chief", "worker", "ps")}
    assert roles["ps"].get("server", True) and roles["worker"]["server"]

    ports = iter(free_ports(sum(counts.values())))
    cluster = {job: [f"127.0.0.1:{next(ports)}" for _ in range(n)] for job, n in counts.items()}

    procs: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory(prefix="tfmesos-examples-") as root:

        def launch(job: str, index: int, argv: list[str]) -> tuple[subprocess.Popen[bytes], Path]:
            sandbox = Path(root) / f"{job}-{index}"
            (sandbox / "tmp").mkdir(parents=True)
            env = dict(
                os.environ,
                TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": job, "index": index}}),
                TFMESOS_JOB_NAME=job,
                TFMESOS_TASK_INDEX=str(index),
                TFMESOS_CHECKPOINT_DIR=str(Path(root) / "checkpoints"),
                TFMESOS_RESTART_COUNT="0",
                TFMESOS_PYTHON=sys.executable,
                TMPDIR=str(sandbox / "tmp"),
                PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
            )
            log = sandbox / "output.log"
            with log.open("wb") as out:
                proc = subprocess.Popen(argv, cwd=EXAMPLE, env=env, stdout=out,
                                        stderr=subprocess.STDOUT, start_new_session=True)
            procs.append(proc)
            return proc, log

        server_argv = [sys.executable, "-m", "tfmesos.task.tfserver"]
        try:
            servers = [launch(job, i, server_argv)[0]
                       for job in ("ps", "worker") for i in range(counts[job])]
            chief, chief_log = launch("chief", 0, ["/bin/sh", "-c", options["job"]["command"]])
            try:
                chief.wait(timeout=CHIEF_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                pytest.fail(f"the chief did not finish in {CHIEF_TIMEOUT_S} s:\n"
                            + chief_log.read_text(errors="replace")[-4000:])
            output = chief_log.read_text(errors="replace")
            assert chief.returncode == 0, output[-4000:]
            match = re.search(r"^final test accuracy: (\d\.\d{4})$", output, re.MULTILINE)
            assert match, output[-4000:]
            assert float(match.group(1)) >= 0.9, output[-4000:]
            # Servers never exit on their own; they must still be serving, and stop
            # cleanly (exit 0) on SIGTERM as the scheduler stops them.
            assert all(server.poll() is None for server in servers)
            stop(servers)
            assert [server.returncode for server in servers] == [0] * len(servers)
        finally:
            stop(procs)
            left = leftovers({proc.pid for proc in procs})
            for proc in left:
                proc.kill()
            assert not left, f"processes left behind: {left}"
