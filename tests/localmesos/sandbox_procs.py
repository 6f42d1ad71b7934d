"""Test helpers: find (leaked) processes started below a work dir."""
from __future__ import annotations

from pathlib import Path

import psutil

from tests.localmesos.scheduler_client import wait_until

# The test executors, run by path as agents run executors: in a folder of their own, because a
# script's folder comes first on its sys.path, and beside http/ they would import it for the stdlib's.
EXECUTORS = Path(__file__).parent / "executors"


def processes_under(work_dir: Path) -> list[psutil.Process]:
    """Live processes started from a sandbox below ``work_dir``, each with its ``info`` (pid, cwd,
    status and cmdline, read once: a process that ends later still has them)."""
    prefix = str(work_dir)
    found = []
    for process in psutil.process_iter(["pid", "cwd", "status", "cmdline"]):
        try:
            if process.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            cwd = process.info["cwd"] or ""
            if cwd.startswith(prefix):
                found.append(process)
                continue
            directory = process.environ().get("MESOS_DIRECTORY", "")
            if directory.startswith(prefix):
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def assert_no_processes(work_dir: Path, timeout: float = 10.0) -> None:
    wait_until(lambda: not processes_under(work_dir), timeout, message=f"processes under {work_dir} to exit")
