"""Executor and task processes: spawn in a process group, watch exits, kill trees.

Every container gets a process group of its own, because pymesos executors
``killpg(0, SIGKILL)`` on shutdown.  Not a session of its own (Mesos'
launcher does ``setsid``, but there cgroups share the CPU): with the kernel's
autogroup scheduling every session is one scheduling entity, so four
containers in four sessions would get a quarter of the CPU each, whatever
their threads want, and training runs ~10% slower than the same processes
started from one shell.  Exits are observed through a pidfd registered with
the event loop, so watching a process costs no thread.

A container is destroyed by its process group, every descendant seen so far,
and, after its main process died abnormally (kill -9 leaves children to init),
every process still carrying the container's ``MESOS_DIRECTORY``.
"""
from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    import psutil  # imported where used: an agent needs it once it has a process to record or kill

log = logging.getLogger(__name__)


def wait_status(returncode: int) -> int:
    """The raw waitpid() status Mesos reports in FAILURE events (-1: unknown)."""
    if returncode == UNKNOWN_EXIT:
        return -1
    return (-returncode) & 0x7F if returncode < 0 else (returncode & 0xFF) << 8


def describe_exit(returncode: int) -> str:
    """stout WSTRINGIFY: 'exited with status N' / 'terminated with signal Name'."""
    if returncode == UNKNOWN_EXIT:
        return "exited with an unknown status"
    if returncode >= 0:
        return f"exited with status {returncode}"
    try:
        name = signal.strsignal(-returncode) or f"Unknown signal {-returncode}"
    except ValueError:
        name = f"Unknown signal {-returncode}"
    return f"terminated with signal {name}"


# returncode of an adopted process (not our child: its exit status is unknowable).
UNKNOWN_EXIT = -(2 ** 31)


@dataclass
class ManagedProcess:
    popen: subprocess.Popen | None
    returncode: int | None = None
    # Seen descendants as psutil handles: they remember each process' start time, so a pid the
    # kernel has since given to another process (pids wrap quickly) is never signalled.
    _descendants: dict[int, psutil.Process] = field(default_factory=dict)
    _pidfd: int | None = None
    adopted_pid: int = 0
    directory: str = ""  # the container's MESOS_DIRECTORY, which its processes inherit
    # Forked by the fork server (forkserver.py), which reaps it and reports how it ended.
    exit_source: Any = None

    @classmethod
    def adopt(cls, pid: int, directory: str = "") -> "ManagedProcess":
        """Take over a process a previous master started (after a restart)."""
        return cls(None, adopted_pid=pid, directory=directory)

    @property
    def pid(self) -> int:
        return self.popen.pid if self.popen is not None else self.adopted_pid

    @property
    def alive(self) -> bool:
        return self.returncode is None

    def watch(self, loop: asyncio.AbstractEventLoop, on_exit: Callable[["ManagedProcess"], None]) -> None:
        """Call ``on_exit`` in the loop once the process has been reaped."""
        if self.exit_source is not None:
            self.exit_source.watch_exit(self, lambda code: self._finish_from_thread(code, on_exit))
            return
        self.watch_pid(loop, on_exit)

    def watch_pid(self, loop: asyncio.AbstractEventLoop, on_exit: Callable[["ManagedProcess"], None]) -> None:
        """Watch through a pidfd: the exit status is known only for our own children."""
        def reap() -> None:
            code = self.popen.poll() if self.popen is not None else UNKNOWN_EXIT
            if code is None:
                return
            self._stop_watching(loop)
            self.returncode = code
            on_exit(self)

        try:
            self._pidfd = os.pidfd_open(self.pid)
        except ProcessLookupError:
            loop.call_soon(self._finish_from_thread, UNKNOWN_EXIT, on_exit)  # adopted and already gone
            return
        except (AttributeError, OSError):
            # No pidfd (old kernel): one short-lived waiter thread per process.
            def wait() -> None:
                import psutil

                if self.popen is not None:
                    code = self.popen.wait()
                else:
                    while psutil.pid_exists(self.pid) and _not_zombie(self.pid):
                        threading.Event().wait(0.5)
                    code = UNKNOWN_EXIT
                loop.call_soon_threadsafe(self._finish_from_thread, code, on_exit)

            threading.Thread(target=wait, name=f"wait-{self.pid}", daemon=True).start()
            return
        loop.add_reader(self._pidfd, reap)

    def _finish_from_thread(self, code: int, on_exit: Callable[["ManagedProcess"], None]) -> None:
        self.returncode = code
        on_exit(self)

    def _stop_watching(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._pidfd is not None:
            loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None

    def signal_tree(self, sig: int) -> None:
        """Signal the process group and every descendant seen so far.

        Mesos kills the whole container; we approximate a container by its
        process group plus descendants that left the group, and once the main
        process is gone, the strays that inherited its environment.
        """
        import psutil

        self._descendants.update(_descendants(self.pid))
        if self.abnormal_exit:
            self._descendants.update(_carrying(self.directory))
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        for pid, process in list(self._descendants.items()):
            try:
                process.send_signal(sig)  # checks that pid is still that process
            except psutil.Error:
                del self._descendants[pid]

    @property
    def abnormal_exit(self) -> bool:
        """Gone without finishing its own way (a signal, or adopted): orphans may be left."""
        return self.returncode is not None and self.returncode < 0

    def tree_alive(self) -> bool:
        if self.alive:
            return True
        if _group_alive(self.pid):
            return True
        if self.abnormal_exit:
            self._descendants.update(_carrying(self.directory))
        return any(_running(process) for process in self._descendants.values())


def start_time(pid: int) -> float | None:
    """Process start time, to tell a recorded pid from a recycled one."""
    import psutil

    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def _carrying(directory: str) -> dict[int, psutil.Process]:
    """Processes whose environment names the container's sandbox: they may have left its process
    group and, once their parent died, its process tree too (an executor killed with -9 leaves its
    task's children to init), but they keep the environment they were started with.  One read
    per process on the host, so only done for containers that ended abnormally."""
    import psutil

    if not directory:
        return {}
    marker = b"\0MESOS_DIRECTORY=" + os.fsencode(directory) + b"\0"
    own = os.getpid()
    found = {}
    for pid in psutil.pids():
        if pid == own:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = b"\0" + f.read()
            if marker in environ:
                found[pid] = psutil.Process(pid)
        except (OSError, psutil.Error):
            continue
    return found


def _descendants(pid: int) -> dict[int, psutil.Process]:
    import psutil

    try:
        return {child.pid: child for child in psutil.Process(pid).children(recursive=True)}
    except psutil.Error:
        return {}


def _running(process: psutil.Process) -> bool:
    import psutil

    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _not_zombie(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def spawn(argv: list[str], env: dict[str, str], cwd: Path, executable: str | None = None) -> ManagedProcess:
    """Start a container process (own process group) with stdout/stderr appended to the sandbox files."""
    with open(cwd / "stdout", "ab") as out, open(cwd / "stderr", "ab") as err:
        popen = subprocess.Popen(
            argv,
            executable=executable,
            env=env,
            cwd=str(cwd),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            close_fds=True,
            process_group=0,
        )
    return ManagedProcess(popen, directory=env.get("MESOS_DIRECTORY", ""))
