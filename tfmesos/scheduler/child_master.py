"""The embedded master as a child process that dies with its parent.

``tfmesos.cluster()`` uses it from the main thread: if the caller is killed outright (SIGKILL,
the OOM killer), the kernel sends the child SIGTERM (PR_SET_PDEATHSIG) and ``tfmesos
local-master`` stops every task it runs before it exits. An in-process master would die with
the caller and leave its executors behind.
"""
from __future__ import annotations

import ctypes
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

START_TIMEOUT = 60.0
STOP_TIMEOUT = 60.0


def _term_with_parent() -> None:
    """In the child: SIGTERM when the thread that started it (the caller's) goes away."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class ChildMaster:
    """``tfmesos local-master`` in a child process; ``address``, ``work_dir`` and ``stop()``."""

    def __init__(self, agents: int, agent_cpus: float, agent_mem: float, agent_disk: float, gpus_per_agent: int,
                 ports_per_agent: int):
        self.work_dir = Path(tempfile.mkdtemp(prefix="tfmesos-cluster-"))
        self.address = ""
        self._lines: list[str] = []
        self._ready = threading.Event()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tfmesos.client.cli", "local-master", "--port", "0", "--agents", str(agents),
             "--agent-cpus", str(agent_cpus), "--agent-mem", str(agent_mem), "--agent-disk", str(agent_disk), "--gpus-per-agent", str(gpus_per_agent),
             "--first-port", "0", "--ports-per-agent", str(ports_per_agent),
             "--work-dir", str(self.work_dir / "master"), "--no-recovery"],  # it goes with this object
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True,  # Ctrl-C in a terminal reaches the caller, which closes the cluster
            preexec_fn=_term_with_parent,
        )
        threading.Thread(target=self._read, name="tfmesos-child-master", daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:  # drained to the end, so the child never blocks on its pipe
            if not self._ready.is_set():
                self._lines.append(line.rstrip("\n"))
                if " listening on " in line:
                    self.address = line.rsplit(" ", 1)[1].strip()
                    self._ready.set()
        self._ready.set()

    def start(self) -> "ChildMaster":
        if not self._ready.wait(START_TIMEOUT) or not self.address:
            self.stop()
            raise RuntimeError("the embedded master did not start: " + " | ".join(self._lines[-10:]))
        return self

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # it kills every task it runs, then exits
            try:
                self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.work_dir, ignore_errors=True)
