"""How a job ends (core/ending.py) and whether it wants offers (core/offer_interest.py), alone."""
import pytest

from tfmesos.core import actions as act
from tfmesos.core.job import finishing, gang
from tfmesos.core.phase import FAILED, FINISHING, KILLED
from tfmesos.core.placement.offer_interest import REFUSE_WHEN_IDLE, revive, suppress_if_idle

from tests.core.helpers import offer, spec_of, state_of


def test_finishing_gives_back_held_offers_kills_live_tasks_and_suppresses_once():
    job, tr = state_of(spec_of(worker={"count": 2, "cpus": 3}))
    gang.offers(job, tr, [offer(0, cpus=4)], 0.0)
    assert tr.held
    actions = finishing.finish(job, tr, FAILED, "boom", 5.0)
    assert actions == [act.Decline(("O0",), REFUSE_WHEN_IDLE), act.Suppress(), act.Done(FAILED, "boom")]
    assert job.phase == FAILED and job.events == ["failed: boom"] and finishing.end_note(job) == "failed: boom"
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


def test_offers_are_suppressed_only_when_nothing_waits_and_revived_once():
    job, tr = state_of(spec_of(worker={"count": 1}))
    assert suppress_if_idle(job, tr) == [], "a task waits"
    gang.offers(job, tr, [offer(0)], 0.0)  # placed: suppressed by the launch
    assert tr.suppressed and suppress_if_idle(job, tr) == []
    assert revive(tr) == [act.Revive()] and revive(tr) == []
