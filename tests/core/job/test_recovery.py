"""Status updates, relaunch and restarts alone (core/job/recovery.py), on a bare record and transient state."""
import pytest

from tfmesos.core import actions as act
from tfmesos.core.job import gang, recovery
from tfmesos.core.phase import FINISHING, PLACING
from tfmesos.core.task_state import PENDING, StatusUpdate, TaskState
from tfmesos.core.state.record import NoSuchTask
from tfmesos.core.spec import TaskKey

from tests.core.helpers import offer, spec_of, state_of

W0, W1 = TaskKey("worker", 0), TaskKey("worker", 1)


def running(**roles):
    job, tr = state_of(spec_of(**roles))
    gang.offers(job, tr, [offer(0, cpus=16, mem=65536)], 0.0)
    for rec in job.tasks.values():
        recovery.status(job, tr, StatusUpdate(rec.task_id, TaskState.TASK_RUNNING, agent_id="S0"), 1.0)
    return job, tr


def test_an_update_about_an_attempt_the_job_does_not_run_kills_it_if_it_is_live():
    job, tr = running(worker={"count": 1})
    assert recovery.status(job, tr, StatusUpdate("t.worker.0.99", TaskState.TASK_RUNNING, agent_id="S7"), 2.0) == [
        act.Kill("t.worker.0.99", "S7")]
    assert recovery.status(job, tr, StatusUpdate("t.worker.0.99", TaskState.TASK_FAILED, agent_id="S7"), 2.0) == []


def test_an_update_answers_the_reconciliation():
    job, tr = running(worker={"count": 1})
    tr.unreconciled = {job.tasks[W0].task_id}
    recovery.status(job, tr, StatusUpdate(job.tasks[W0].task_id, TaskState.TASK_RUNNING), 2.0)
    assert not tr.unreconciled


def test_a_failed_task_is_requeued_after_its_backoff_and_offers_revived():
    job, tr = running(worker={"count": 1, "restart_policy": "OnFailure", "max_restarts": 2})
    tr.interest.suppressed = True
    actions = recovery.status(job, tr, StatusUpdate(job.tasks[W0].task_id, TaskState.TASK_FAILED, exit_code=137), 5.0)
    rec = job.tasks[W0]
    assert actions == [act.Revive()] and rec.state == PENDING and rec.restarts == 1 and rec.not_before > 5.0
    assert job.job_restarts == 1 and "relaunch #1" in job.events[-1]


def test_a_permanent_failure_ends_the_job_and_says_why():
    job, tr = running(worker={"count": 1, "restart_policy": "Never"})
    actions = recovery.status(job, tr, StatusUpdate(job.tasks[W0].task_id, TaskState.TASK_FAILED, exit_code=1,
                                                    exception="ValueError: bad"), 5.0)
    assert job.phase != PLACING and job.ending == "FAILED"
    assert job.cause.startswith("worker:0 (t.worker.0.1) ended TASK_FAILED, exit code 1, ValueError: bad; not relaunched")
    assert of(act.Done, actions) and job.phase == "FAILED", "no task left live: the end at once"


def test_the_last_success_task_finishing_succeeds_the_job():
    job, tr = running(worker={"count": 2})
    assert recovery.status(job, tr, StatusUpdate(job.tasks[W1].task_id, TaskState.TASK_FINISHED), 3.0) == []
    actions = recovery.status(job, tr, StatusUpdate(job.tasks[W0].task_id, TaskState.TASK_FINISHED), 4.0)
    assert of(act.Done, actions)[0].end == "SUCCEEDED"


def test_a_person_s_restart_of_an_all_reduce_worker_restarts_the_whole_job_without_a_failure():
    job, tr = running(worker={"count": 2})
    actions = recovery.restart_task(job, tr, W0, 5.0)
    assert sorted(a.task_id for a in of(act.Kill, actions)) == ["t.worker.0.1", "t.worker.1.2"]
    assert job.phase == PLACING and job.tasks[W0].requested_restarts == 1 and job.tasks[W0].restarts == 0
    assert tr.others_changed, "the journal writes the whole job"
    with pytest.raises(ValueError, match="the job is PLACING: only a task of a RUNNING job"):
        recovery.restart_task(job, tr, W0, 6.0)
    with pytest.raises(NoSuchTask, match="expected one of worker:0, worker:1"):
        recovery.restart_task(job, tr, TaskKey("worker", 5), 6.0)


def test_a_task_killed_for_its_relaunch_waits_pending_for_an_offer():
    job, tr = running(ps={"count": 1}, worker={"count": 1}, chief={"count": 1})
    recovery.restart_task(job, tr, W0, 5.0)  # a parameter-server job's worker: it alone restarts
    with pytest.raises(ValueError, match="already restarting"):
        recovery.restart_task(job, tr, W0, 5.5)
    recovery.status(job, tr, StatusUpdate(job.tasks[W0].task_id, TaskState.TASK_KILLED), 6.0)
    assert job.tasks[W0].state == PENDING and not job.tasks[W0].relaunch_after_kill


def test_while_finishing_an_end_only_counts_towards_the_job_s_end():
    job, tr = running(worker={"count": 1, "restart_policy": "OnFailure"})
    job.phase, job.ending = FINISHING, "KILLED"
    actions = recovery.status(job, tr, StatusUpdate(job.tasks[W0].task_id, TaskState.TASK_KILLED), 6.0)
    assert actions == [act.Done("KILLED", "")] and job.tasks[W0].restarts == 0


def of(kind, actions):
    return [a for a in actions if isinstance(a, kind)]


def test_a_whole_job_restart_marks_every_other_task_changed_for_the_journal():
    """Even one that was waiting already (a worker relaunched alone, not placed yet, when the ps
    fails): its restarts and the failure it keeps changed."""
    job, tr = running(ps={"count": 1, "restart_policy": "OnFailure", "max_restarts": 3},
                      worker={"count": 1, "restart_policy": "OnFailure", "max_restarts": 3})
    recovery.status(job, tr, StatusUpdate(job.tasks[W0].task_id, TaskState.TASK_FAILED, exit_code=1), 2.0)
    assert job.tasks[W0].state == PENDING
    recovery.take_others_changed(tr)
    ps = TaskKey("ps", 0)
    recovery.status(job, tr, StatusUpdate(job.tasks[ps].task_id, TaskState.TASK_FAILED, exit_code=1,
                                          exception="E: y"), 3.0)
    assert job.tasks[W0].failed_with == "E: y" and job.tasks[W0].restarts_with_job == 1
    assert recovery.take_others_changed(tr)
