"""The clock and reconciliation alone (core/job/timers.py), on a bare record and transient state."""
from tfmesos.core import actions as act
from tfmesos.core.job import gang, reconciliation, recovery, timers
from tfmesos.core.state.record import RECONCILE_RETRY_SECONDS
from tfmesos.core.phase import FINISHING
from tfmesos.core.task_state import StatusUpdate, TaskState
from tfmesos.core.spec import TaskKey

from tests.core.helpers import offer, spec_of, state_of

W0 = TaskKey("worker", 0)


def launched(**roles):
    job, tr = state_of(spec_of(**roles))
    gang.offers(job, tr, [offer(0, cpus=16, mem=65536)], 0.0)
    return job, tr


def test_start_asks_for_offers_and_reconciles_what_was_launched():
    job, tr = launched(worker={"count": 2})
    tr.interest.suppressed = True
    actions = timers.start(job, tr)
    assert actions == [act.Persist(), act.Revive(), act.Reconcile(("t.worker.0.1", "t.worker.1.2")), act.Reconcile(())]
    assert not tr.interest.suppressed and tr.unreconciled == {"t.worker.0.1", "t.worker.1.2"} and tr.reconcile_at is None


def test_reconciliation_is_asked_again_with_backoff_for_the_tasks_not_answered_about():
    job, tr = launched(worker={"count": 2})
    timers.start(job, tr)
    recovery.status(job, tr, StatusUpdate("t.worker.0.1", TaskState.TASK_RUNNING), 1.0)
    assert reconciliation.again(job, tr, 1.0) == [] and tr.reconcile_at == 1.0 + RECONCILE_RETRY_SECONDS
    assert timers.next_deadline(job, tr, 2.0) <= tr.reconcile_at
    assert reconciliation.again(job, tr, 10.0) == []
    assert reconciliation.again(job, tr, 16.0) == [act.Reconcile(("t.worker.1.2",))]
    assert tr.reconcile_at == 16.0 + 2 * RECONCILE_RETRY_SECONDS, "the delay doubles"
    for _ in range(10):
        reconciliation.again(job, tr, tr.reconcile_at)
    assert tr.reconcile_delay == reconciliation.RECONCILE_RETRY_MAX_SECONDS
    recovery.status(job, tr, StatusUpdate("t.worker.1.2", TaskState.TASK_RUNNING), 1.0)
    assert reconciliation.again(job, tr, tr.reconcile_at) == [] and not tr.unreconciled


def test_a_task_not_running_by_its_startup_timeout_is_killed_and_ended_by_the_clock():
    job, tr = launched(worker={"count": 1, "restart_policy": "OnFailure"})
    timeout = job.spec.policies.startup_timeout_seconds
    assert timers.next_deadline(job, tr, 1.0) == min(1.0 + 5.0, timeout)
    actions = timers.tick(job, tr, timeout)
    assert act.Kill("t.worker.0.1", "S0") in actions
    assert job.tasks[W0].state == "PENDING" and "startup timeout" in job.tasks[W0].message


def test_while_finishing_kills_are_sent_again_and_the_grace_ends_the_job():
    job, tr = launched(worker={"count": 1})
    job.phase, job.ending, job.finishing_since = FINISHING, "KILLED", 10.0
    job.tasks[W0].killing_since = 10.0
    assert timers.tick(job, tr, 12.0) == []
    assert timers.tick(job, tr, 10.0 + timers.KILL_RETRY_SECONDS) == [act.Kill("t.worker.0.1", "S0")]
    assert timers.next_deadline(job, tr, 41.0) == 10.0 + timers.finish_grace(job)
    actions = timers.tick(job, tr, 10.0 + timers.finish_grace(job))
    assert actions[-1] == act.Done("KILLED", "") and job.phase == "KILLED"


def test_a_partial_gang_is_given_back_after_its_hold_limit_with_a_new_jittered_limit():
    job, tr = state_of(spec_of(worker={"count": 2, "cpus": 3}))
    gang.offers(job, tr, [offer(0, cpus=4)], 0.0)
    limit = tr.hold.hold_limit
    assert timers.next_deadline(job, tr, 4.0) == limit
    (decline,) = [a for a in timers.tick(job, tr, limit) if isinstance(a, act.Decline)]
    assert decline.offer_ids == ("O0",) and not tr.hold.held and tr.hold.hold_limit != limit


def test_no_offer_at_all_is_noted_once_long_before_the_placement_timeout():
    job, tr = state_of(spec_of(worker={"count": 1}))
    timers.tick(job, tr, gang.NO_OFFER_NOTE_SECONDS)
    timers.tick(job, tr, gang.NO_OFFER_NOTE_SECONDS + 1)
    assert len(job.events) == 1 and job.events[0].startswith("still waiting after 15 s")
