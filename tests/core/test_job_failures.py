"""How a job reads when its tasks fail: the exception that ended a task (its summary, status and
record)."""
from tfmesos.core import actions as act
from tfmesos.core.job import Job, StatusUpdate
from tfmesos.core.spec import TaskKey

from tests.core.helpers import offer, spec_of
from tests.core.test_job import launch_all, of, run_all

W0, W1 = TaskKey("worker", 0), TaskKey("worker", 1)
CONVERT = "ValueError: Attempt to convert a value (PerReplica:{"


def fail(job, task_id, now, exit_code=1, exception=""):
    return job.status(StatusUpdate(task_id, "TASK_FAILED", message="process ended with exit code 1", **({"exception": exception} if exception else {}),
                                   exit_code=exit_code), now)


def test_the_exception_that_ended_a_task_is_the_cause_its_status_and_its_record():
    job = Job.new(spec_of(worker={"count": 2, "restart_policy": "Never"}), 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    actions = fail(job, launched[W1].task_id, 1.0, exception=CONVERT)
    (done,) = of(act.Done, actions) or [None]
    assert done is None  # the other worker is still being killed
    assert job.cause == (f"worker:1 ({launched[W1].task_id}) ended TASK_FAILED, exit code 1, {CONVERT}; "
                         "not relaunched: restart policy Never")
    status = {t.name: t for t in job.snapshot().tasks}
    assert status["worker:1"].exception == CONVERT and status["worker:1"].message == "process ended with exit code 1"
    assert status["worker:0"].exception == ""
    kept = Job.from_dict(job.spec, job.to_dict())
    assert kept.tasks[W1].exception == CONVERT and kept.cause == job.cause


def test_without_an_exception_the_cause_keeps_the_executors_message():
    job = Job.new(spec_of(worker={"count": 1, "restart_policy": "Never"}), 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    fail(job, launched[W0].task_id, 1.0, exit_code=3)
    assert "exit code 3, 'process ended with exit code 1'; not relaunched" in job.cause


def test_a_relaunch_says_why_and_its_new_attempt_starts_without_the_old_exception():
    job = Job.new(spec_of(ps={"count": 1}, chief={"count": 1},
                          worker={"count": 1, "server": True, "restart_policy": "OnFailure"}), 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    fail(job, launched[W0].task_id, 1.0, exception="OSError: [Errno 28] No space left on device")
    assert job.events[-1].startswith("worker:0 TASK_FAILED exit 1 (OSError: [Errno 28] No space left on device): "
                                     "relaunch #1")
    job.tick(5.0)
    job.offers([offer(0, cpus=8, mem=16384)], 5.0)
    assert job.tasks[W0].state == "TASK_STAGING" and job.tasks[W0].exception == ""
