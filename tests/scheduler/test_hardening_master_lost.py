"""Once subscribed, a lost master is waited for as long as service.failover_timeout keeps the
job alive on the Mesos side, with a line now and then; then the run ends, saying why. The
console collapses a line repeated by a retry loop."""
from __future__ import annotations

from tfmesos.core.job.job import Job
from tfmesos.mesos.taskinfo import ExecutorSettings
from tfmesos.options.load import resolve_options
from tfmesos.scheduler import shell_clock
from tfmesos.scheduler.job_shell import Hooks, JobShell
from tfmesos.scheduler.shell_clock import LOST_MASTER_NOTE_EVERY
from tfmesos.store.job_store import JobStore
from tfmesos.options.jobspec import job_spec_from_options


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class _Driver:
    """pymesos' driver once re-subscribed: its calls go nowhere."""

    framework_id = "F-1"

    def __getattr__(self, name: str):
        return lambda *args, **kwargs: None


def _scheduler(failover_timeout: float) -> tuple[JobShell, Clock, list[str]]:
    options = resolve_options({"job": {"command": "true"}, "roles": {"worker": {"count": 1}},
                               "service": {"failover_timeout": failover_timeout}})
    spec = job_spec_from_options(options)
    clock, events = Clock(), []
    sched = JobShell(Job.new(spec, clock.now), ExecutorSettings(python="python3"), JobStore(None, options),
                     hooks=Hooks(event=events.append), clock=clock)
    return sched, clock, events


def test_lost_master_is_waited_for_until_failover_timeout():
    sched, clock, events = _scheduler(failover_timeout=100)
    sched.subscribed_once = sched.connected = True
    sched.mesos.disconnected(None)
    assert sched.disconnected_at == clock.now and not sched.connected
    clock.now += LOST_MASTER_NOTE_EVERY + 1
    shell_clock.master_lost(sched, clock.now)
    assert not sched.done.is_set()
    assert any("no Mesos master for" in e and "failover_timeout (100 s)" in e for e in events), events
    noted = len(events)
    shell_clock.master_lost(sched, clock.now + 1)  # not again within the interval: no flood
    assert len(events) == noted
    clock.now += 100
    with sched.cond:  # as the clock's loop calls it
        shell_clock.master_lost(sched, clock.now)
    assert sched.done.is_set() and "failover_timeout (100 s)" in sched.result.cause


def test_master_back_in_time_is_reported_and_resets_the_wait():
    sched, clock, events = _scheduler(failover_timeout=100)
    sched.subscribed_once = True
    sched.mesos.disconnected(None)
    clock.now += 50
    sched.mesos.reregistered(_Driver(), {"hostname": "m", "port": 5050})
    assert sched.disconnected_at is None and any("back after 50 s" in e for e in events)


def test_console_collapses_a_repeated_line():
    import io

    from tfmesos.scheduler.runner import Console

    out = io.StringIO()
    console = Console(out)
    for _ in range(1000):
        console.line("error from the master: same thing")
    console.line("something else")
    lines = out.getvalue().splitlines()
    assert len(lines) == 3, lines
    assert "repeated 999 more times" in lines[1] and lines[2].endswith("something else")
