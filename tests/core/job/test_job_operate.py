"""Acting on a running job (a restart asked for by a person) and progress reports, in the core."""
import pytest

from tfmesos.core import actions as act
from tfmesos.core.job.job import Job
from tfmesos.core.phase import PLACING, RUNNING
from tfmesos.core.task_state import StatusUpdate, TaskState
from tfmesos.core.spec import TaskKey

from tests.core.helpers import offer, spec_of
from tests.core.job.test_job import PSS, launch_all, of, run_all

W1 = TaskKey("worker", 1)


def running_job():
    job = Job.new(spec_of(**PSS), 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    return job, launched


def test_requested_restart_relaunches_at_once_without_counting_a_failure():
    job, launched = running_job()
    actions = job.restart_task(W1, 10.0)
    assert of(act.Kill, actions) == [act.Kill(launched[W1].task_id, "S0")]
    assert "worker:1: restart asked for by a person" in job.events
    job.status(StatusUpdate(launched[W1].task_id, TaskState.TASK_KILLED, agent_id="S0"), 10.5)
    rec = job.tasks[W1]
    assert rec.state == "PENDING" and rec.not_before <= 10.5, "no backoff"
    relaunch = job.offers([offer(0, cpus=8, mem=16384)], 10.6)
    (new,) = [t for l in of(act.Launch, relaunch) for t in l.tasks]
    assert new.key == W1 and new.task_id != launched[W1].task_id
    assert new.port == launched[W1].port, "back at its address when the offer allows"
    assert (rec.restarts, job.job_restarts, rec.requested_restarts) == (0, 0, 1)
    assert job.attempts(W1) == [launched[W1].task_id, new.task_id]
    assert job.phase == RUNNING
    (shown,) = [t for t in job.snapshot().tasks if (t.role, t.index) == ("worker", 1)]
    assert (shown.restarts, shown.requested_restarts) == (0, 1)


def test_requested_restart_of_a_parameter_server_restarts_the_whole_job():
    job, launched = running_job()
    actions = job.restart_task(TaskKey("ps", 0), 5.0)
    assert {k.task_id for k in of(act.Kill, actions)} == {t.task_id for t in launched.values()}
    assert job.phase == PLACING and job.job_restarts == 0


def test_requested_restart_is_refused_when_it_cannot_be_done():
    job, launched = running_job()
    with pytest.raises(ValueError, match="no such task"):
        job.restart_task(TaskKey("worker", 7), 1.0)
    job.restart_task(W1, 1.0)
    with pytest.raises(ValueError, match="already restarting"):
        job.restart_task(W1, 1.1)
    fresh = Job.new(spec_of(**PSS), 0.0)
    with pytest.raises(ValueError, match="PLACING"):
        fresh.restart_task(W1, 0.0)


def test_progress_comes_from_the_task_that_decides_success_and_only_its_current_attempt():
    job, launched = running_job()
    assert job.snapshot().progress is None
    job.report(launched[TaskKey("worker", 0)].task_id, {"step": 5}, 1.0)
    assert job.progress()["step"] == 5, "without a chief report, the latest report"
    chief = launched[TaskKey("chief", 0)].task_id
    job.report(chief, {"step": 100, "total_steps": 400, "loss": 0.5}, 2.0)
    job.report(chief, {"step": 200}, 3.0)
    job.report(launched[TaskKey("worker", 0)].task_id, {"step": 999}, 4.0)
    progress = job.snapshot().progress
    assert progress is not None and progress.to_json() == {"step": 200, "total_steps": 400, "loss": 0.5, "at": 3.0, "fraction": 0.5}
    job.report("t.chief.0.999", {"step": 300}, 5.0)  # not an attempt of ours
    assert job.progress()["step"] == 200


def tensorboard_job():
    from tfmesos.options.load import resolve_options
    from tfmesos.options.jobspec import job_spec_from_options

    options = {"service": {"name": "t"}, "job": {"command": "python train.py"}, "roles": PSS,
               "tensorboard": {"enabled": True}}
    job = Job.new(job_spec_from_options(resolve_options(options)), 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    return job, launched


def test_tensorboard_is_one_more_task_outside_the_clusterspec():
    job, launched = tensorboard_job()
    tb = TaskKey("tensorboard", 0)
    assert tb in launched and job.spec.role("tensorboard").command.startswith('exec "$TFMESOS_PYTHON" -m tensorboard.main')
    assert "tensorboard" not in job.cluster() and set(job.cluster()) == {"ps", "worker", "chief"}
    snap = job.snapshot()
    assert snap.tensorboard == job.tasks[tb].endpoint and snap.tasks[-1].role == "tensorboard"
    chief = job.tasks[TaskKey("chief", 0)].task_id
    kills = job.status(StatusUpdate(chief, TaskState.TASK_FINISHED, exit_code=0, agent_id="S0"), 2.0)
    assert job.tasks[tb].task_id in {k.task_id for k in of(act.Kill, kills)}, "stopped with the job"


def test_tensorboard_failing_for_good_does_not_fail_the_job_and_ends_with_it():
    job, launched = tensorboard_job()
    tb = TaskKey("tensorboard", 0)
    now = 1.0
    for _ in range(job.spec.role("tensorboard").max_restarts):
        job.status(StatusUpdate(job.tasks[tb].task_id, TaskState.TASK_FAILED, exit_code=1, agent_id="S0"), now)
        now += 60
        job.tick(now)
        actions = job.offers([offer(0, cpus=8, mem=16384)], now)
        (again,) = [t for l in of(act.Launch, actions) for t in l.tasks]
        job.status(StatusUpdate(again.task_id, TaskState.TASK_RUNNING, agent_id="S0"), now)
    job.status(StatusUpdate(job.tasks[tb].task_id, TaskState.TASK_FAILED, exit_code=1, agent_id="S0"), now)
    assert job.phase == RUNNING and any("the job goes on without it" in e for e in job.events)
    assert job.snapshot().tensorboard is None
    chief = job.tasks[TaskKey("chief", 0)].task_id
    kills = job.status(StatusUpdate(chief, TaskState.TASK_FINISHED, exit_code=0, agent_id="S0"), now)
    assert job.phase == "FINISHING" and job.succeeded
    assert job.tasks[tb].task_id not in {k.task_id for k in of(act.Kill, kills)}, "already ended"
