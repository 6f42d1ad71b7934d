"""How a job ends (core/job/finishing.py) and whether it wants offers (core/placement/offer_interest.py), alone."""
import pytest

from tfmesos.core import actions as act
from tfmesos.core.job import finishing, gang
from tfmesos.core.phase import FAILED, FINISHING, KILLED
from tfmesos.core.placement.offer_interest import REFUSE_WHEN_IDLE, revive, suppress_if_idle
from tfmesos.core.state import notices, tasks
from tfmesos.core.task_state import PENDING, StatusUpdate, TaskState

from tests.core.helpers import offer, spec_of, state_of


def test_finishing_gives_back_held_offers_kills_live_tasks_and_suppresses_once():
    job, tr = state_of(spec_of(worker={"count": 2, "cpus": 3}))
    gang.offers(job, tr, [offer(0, cpus=4)], 0.0)
    assert tr.hold.held
    actions = finishing.finish(job, tr, FAILED, "boom", 5.0)
    assert actions == [act.Decline(("O0",), REFUSE_WHEN_IDLE), act.Suppress(), act.Done(FAILED, "boom")]
    assert job.phase == FAILED and job.events == ["failed: boom"] and notices.end_text(FAILED, "boom") == "failed: boom"
    assert finishing.finish(job, tr, KILLED, "again", 6.0) == [], "a job already ending keeps its end"


def test_the_end_comes_once_no_task_is_live_and_only_once():
    job, tr = state_of(spec_of(worker={"count": 1}))
    gang.offers(job, tr, [offer(0)], 0.0)
    actions = finishing.stop(job, tr, "stopped by SIGTERM", 1.0, KILLED)
    assert act.Kill("t.worker.0.1", "S0") in actions and job.phase == FINISHING
    assert finishing.waiting_for(job) == "1 task(s) to end: worker:0 TASK_STAGING"
    assert finishing.maybe_done(job, tr, 2.0, force=True) == [act.Done(KILLED, "stopped by SIGTERM")]
    assert finishing.maybe_done(job, tr, 3.0, force=True) == [] and finishing.waiting_for(job).endswith("it has ended")


def test_a_stop_names_only_a_real_end():
    job, tr = state_of(spec_of(worker={"count": 1}))
    with pytest.raises(ValueError, match="not 'RUNNING'"):
        finishing.stop(job, tr, "why", 1.0, "RUNNING")


def test_the_end_comes_with_the_last_task_s_end_told_one_by_one_or_found_by_a_loaded_job():
    job, tr = state_of(spec_of(worker={"count": 3}))
    gang.offers(job, tr, [offer(0, cpus=8)], 0.0)
    finishing.stop(job, tr, "stopped", 1.0, KILLED)
    keys = list(job.tasks)
    for i, key in enumerate(keys):
        tasks.ended(job.tasks[key], StatusUpdate(job.tasks[key].task_id, TaskState.TASK_KILLED))
        done = finishing.maybe_done(job, tr, 2.0, ended=key)
        assert done == ([act.Done(KILLED, "stopped")] if i == len(keys) - 1 else []), (i, done)
    # A job loaded while it was finishing knows nothing of what was live: it looks, once.
    job, tr = state_of(spec_of(worker={"count": 2}))
    gang.offers(job, tr, [offer(0, cpus=8)], 0.0)
    finishing.stop(job, tr, "stopped", 1.0, KILLED)
    tr.live_while_finishing = None
    first, second = job.tasks.values()
    tasks.ended(first, StatusUpdate(first.task_id, TaskState.TASK_KILLED))
    assert finishing.maybe_done(job, tr, 2.0, ended=first.key) == [] and tr.live_while_finishing == {second.key}
    tasks.ended(second, StatusUpdate(second.task_id, TaskState.TASK_KILLED))
    assert finishing.maybe_done(job, tr, 3.0, ended=second.key) == [act.Done(KILLED, "stopped")]


def test_offers_are_suppressed_only_when_nothing_waits_and_revived_once():
    job, tr = state_of(spec_of(worker={"count": 1}))
    waiting = lambda: any(r.state == PENDING for r in job.tasks.values())  # noqa: E731
    assert suppress_if_idle(tr.interest, waiting) == [], "a task waits"
    gang.offers(job, tr, [offer(0)], 0.0)  # placed: suppressed by the launch
    assert tr.interest.suppressed and suppress_if_idle(tr.interest, lambda: False) == []
    assert revive(tr.interest) == [act.Revive()] and revive(tr.interest) == []
