"""The clock of one job's shell: the loop that drives the core's timers (``Job.tick`` when
``next_deadline`` comes, or soon after an event), carries out a stop asked for, asks the master
whether a held-back job can fit (queue_watch.py: its HTTP without the job's lock), and waits for a
lost master as long as ``service.failover_timeout`` keeps the job alive on its side; and whether
that loop still turns (``/v1/health``)."""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

from ..core import actions as act
from ..core.phase import FAILED

if TYPE_CHECKING:
    from .job_shell import JobShell

LOST_MASTER_NOTE_EVERY = 30.0  # seconds between "still waiting for the master" lines
TICK_MIN_INTERVAL = 0.05  # seconds: the core's timers are acted on at most this late


@contextmanager
def unlocked(lock: threading.Condition) -> Iterator[None]:
    """The held ``lock`` released for the block (a slow call that events must not wait for), taken again after."""
    lock.release()
    try:
        yield
    finally:
        lock.acquire()


def run_until_done(shell: JobShell) -> act.Done:
    """Drive timers until the job reaches its end (or the master gives up on us)."""
    stopping = False
    tick_at = last_tick = float("-inf")
    job = shell.job
    with shell.cond:
        while not shell.done.is_set():
            shell.loop_turned = time.monotonic()
            now = shell.clock()
            if shell.stop_cause is not None and not stopping:
                stopping = True
                shell.actions.apply(job.stop(shell.stop_cause, now, shell.stop_end))
                continue
            if now >= tick_at:
                if shell.connected:
                    if shell.queue is not None and shell.queue.due(job, now):
                        with unlocked(shell.cond):  # the master's answer may take a while: events go on
                            answers = shell.queue.ask()
                        queued = shell.queue.judge(job, shell.clock(), answers)
                        if queued is not None:
                            shell.actions.apply(queued)
                        now = shell.clock()
                    shell.actions.apply(job.tick(now))
                elif shell.disconnected_at is not None:
                    master_lost(shell, now)
                if shell.done.is_set():
                    break
                last_tick = now
                tick_at = now + max(TICK_MIN_INTERVAL, min(job.next_deadline(now) - now, 1.0))
            if shell.cond.wait(timeout=max(0.0, tick_at - now)):
                # An event may have brought a deadline forward. Tick and next_deadline walk every
                # task: after a burst of events (a big gang's updates) tick once, not per event.
                tick_at = min(tick_at, max(shell.clock(), last_tick + TICK_MIN_INTERVAL))
    assert shell.result is not None
    return shell.result


def master_lost(shell: JobShell, now: float) -> None:
    """Wait for the master as long as failover_timeout keeps the job alive on its side."""
    assert shell.disconnected_at is not None
    away, limit = now - shell.disconnected_at, shell.spec.service.failover_timeout
    if away > limit:
        shell.finish(act.Done(FAILED, f"the Mesos master did not come back within service.failover_timeout ({limit:g} s)"))
    elif now - shell.lost_noted >= LOST_MASTER_NOTE_EVERY:
        shell.lost_noted = now
        shell.hooks.event(f"no Mesos master for {away:.0f} s; waiting for it up to service.failover_timeout ({limit:g} s)")


def loop_health(shell: JobShell) -> tuple[bool, str]:
    """(healthy, why not) for /v1/health: whether the loop that drives the job still turns.
    Read without the job's lock, which a wedge holds."""
    turned = shell.loop_turned
    if turned is None or shell.done.is_set():
        return True, ""
    age = time.monotonic() - turned
    if age <= shell.loop_stale_seconds:
        return True, ""
    return False, (f"the scheduler's loop has not turned for {age:.0f} s (more than {shell.loop_stale_seconds:g} s): "
                   "it is wedged")
