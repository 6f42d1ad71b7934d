"""Nothing left (test_nothing_left.py) on a real Apache Mesos: a task's Python that catches SIGTERM,
left to init by its shell, ends with its executor when the run is stopped; and SIGKILL of the
scheduler leaves the job to the framework's failover timeout, as Mesos decides: its tasks run on
for a scheduler to take over, and once the timeout is over Mesos tears the framework down and
nothing of the job is left."""
from __future__ import annotations

import signal
import time

import psutil
import pytest

from tests.e2e.real_mesos import RealMesos
from tests.e2e.test_nothing_left import LEFT_WITHIN, _alive, _processes_of, _reach, runs  # noqa: F401 (fixture)

pytestmark = pytest.mark.slow

AGENT = "cpus:4;mem:8192;disk:4000;ports:[31000-31999]"


def test_a_ctrl_c_while_the_tasks_catch_sigterm_leaves_nothing_5_s_after_the_run_on_real_mesos(runs, tmp_path):
    with RealMesos(tmp_path / "mesos", [AGENT]) as master:
        run = runs(tmp_path, "left-real-ctrl-c", ("evaluate", "evaluate"), master=master.address,
                   sandboxes=str(master.sandboxes().resolve()))
        _reach(run, "evaluating")
        run.remember()
        run.signal(signal.SIGINT)
        assert run.wait() == 130, run.proc.output[-3000:]
        left = run.left()
        assert not left, f"left {LEFT_WITHIN:g} s after the end: {[(p.pid, p.cmdline()) for p in left]}"


FAILOVER_TIMEOUT = 10.0


def test_sigkill_of_the_scheduler_leaves_the_tasks_to_the_failover_timeout_then_nothing_on_real_mesos(runs, tmp_path):
    with RealMesos(tmp_path / "mesos", [AGENT]) as master:
        run = runs(tmp_path, "left-real-sigkill", ("evaluate", "evaluate"), master=master.address,
                   sandboxes=str(master.sandboxes().resolve()), service={"failover_timeout": FAILOVER_TIMEOUT})
        _reach(run, "evaluating")
        run.remember()
        run.proc.kill(signal.SIGKILL)
        killed = time.monotonic()
        run.wait()
        tasks = _alive(_processes_of(run.name, run.sandboxes))
        assert len(tasks) >= 6, tasks  # two executors, two shells... their Pythons and children
        gone, _ = psutil.wait_procs(tasks, timeout=FAILOVER_TIMEOUT - 3.0)
        assert not gone, "Mesos keeps a failed-over framework's tasks until its failover timeout"
        assert any(f["name"] == run.name for f in master.state()["frameworks"]), "the framework waits for us"
        psutil.wait_procs(tasks, timeout=max(0.0, killed + FAILOVER_TIMEOUT + LEFT_WITHIN + 3.0 - time.monotonic()))
        left = _alive(tasks) + _alive(_processes_of(run.name, run.sandboxes))
        assert not left, f"left {time.monotonic() - killed:.1f} s after the kill: {[(p.pid, p.cmdline()) for p in left]}"
