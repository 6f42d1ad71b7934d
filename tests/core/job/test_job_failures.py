"""How a job reads when its tasks fail: the exception that ended a task (its summary, status and
record), and what max_restarts counts when a failure restarts the whole job."""
from tfmesos.core import actions as act
from tfmesos.core.job.job import Job
from tfmesos.core.phase import FAILED, PLACING, RUNNING
from tfmesos.core.task_state import StatusUpdate, TaskState
from tfmesos.core.spec import TaskKey

from tests.core.helpers import offer, spec_of
from tests.core.job.test_job import launch_all, of, run_all

W0, W1 = TaskKey("worker", 0), TaskKey("worker", 1)
CONVERT = "ValueError: Attempt to convert a value (PerReplica:{"


def fail(job, task_id, now, exit_code=1, exception=""):
    return job.status(StatusUpdate(task_id, TaskState.TASK_FAILED, message="process ended with exit code 1",
                                   exit_code=exit_code, exception=exception), now)


def relaunch_all(job, now):
    """The killed generation ends, and the whole job is placed again."""
    for rec in job.tasks.values():
        if rec.live:
            job.status(StatusUpdate(rec.task_id, TaskState.TASK_KILLED), now)
    job.tick(now)
    _, launched = launch_all(job, now, [offer(now, cpus=8, mem=16384)])
    run_all(job, launched, now)
    return launched


def test_the_exception_that_ended_a_task_is_the_cause_its_status_and_its_record():
    job = Job.new(spec_of(worker={"count": 2, "restart_policy": "Never"}), 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    assert not of(act.Done, fail(job, launched[W1].task_id, 1.0, exception=CONVERT)), "worker:0 is being killed"
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


# max_restarts where a failure restarts the whole job (here: a collective job's workers).
def test_a_whole_job_restart_counts_once_whichever_worker_failed():
    job = Job.new(spec_of(worker={"count": 2, "restart_policy": "OnFailure", "max_restarts": 1}), 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    fail(job, launched[W1].task_id, 1.0)  # the first failure: the whole job restarts, once
    assert job.phase == PLACING and "relaunch #1" in job.events[-1] and "whole job" in job.events[-1]
    launched = relaunch_all(job, 10.0)
    assert job.phase == RUNNING
    # The other worker fails in the second attempt: per task it would have had a restart left.
    actions = fail(job, launched[W0].task_id, 11.0)
    assert job.ending == FAILED and not of(act.Launch, actions)
    assert job.cause.endswith("not relaunched: the whole job restarted once, the limit (max_restarts 1: "
                              "a whole-job restart counts once, whichever task failed)"), job.cause
    assert job.job_restarts == 1


def test_max_restarts_of_the_failed_tasks_role_bounds_the_whole_jobs_restarts():
    spec = spec_of(chief={"count": 1, "restart_policy": "OnFailure", "max_restarts": 2},
                   worker={"count": 1, "restart_policy": "OnFailure", "max_restarts": 2})
    job = Job.new(spec, 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    now = 1.0
    for failed in (TaskKey("chief", 0), W0):  # two whole-job restarts, each counted once
        fail(job, launched[failed].task_id, now)
        assert job.phase == PLACING, job.cause
        now += 100
        launched = relaunch_all(job, now)
    assert [e for e in job.events if "relaunch #" in e][-1].split(": ")[1].startswith("relaunch #2")
    fail(job, launched[TaskKey("chief", 0)].task_id, now + 1)
    assert job.ending == FAILED and "the whole job restarted 2 times" in job.cause


def test_a_parameter_server_jobs_workers_keep_their_own_limits():
    """A worker of a parameter-server job is relaunched alone: its restarts are its own."""
    spec = spec_of(ps={"count": 1}, chief={"count": 1},
                   worker={"count": 2, "server": True, "restart_policy": "OnFailure", "max_restarts": 1})
    job = Job.new(spec, 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    fail(job, launched[W0].task_id, 1.0)
    fail(job, launched[W1].task_id, 1.0)
    assert job.phase == RUNNING and job.tasks[W0].state == job.tasks[W1].state == "PENDING"


# A bug that fails the same way every time is not relaunched (core/job/retry_policy.py, issue 39).
SHAPE = ('ValueError: Input 0 of layer "sequential" is incompatible with the layer: expected shape=(None, 32), '
         "found shape=(None, 64)")
REPEAT = ("not relaunched: the same exception as the failure before it: a bug that fails the same way every time, "
          "which no relaunch fixes (restart_policy ExitCode stops at the first exit code 1-127)")


def test_the_same_exception_twice_in_a_row_under_a_whole_job_restart_fails_the_job_naming_it():
    job = Job.new(spec_of(worker={"count": 2, "restart_policy": "OnFailure", "max_restarts": 5}), 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    fail(job, launched[W0].task_id, 1.0, exception=SHAPE)
    assert job.phase == PLACING, "a first failure is relaunched: it may be bad luck"
    launched = relaunch_all(job, 10.0)
    # The other worker fails first this time, with the same exception: the job's failure, twice in a row.
    actions = fail(job, launched[W1].task_id, 11.0, exception=SHAPE)
    assert job.ending == FAILED and not of(act.Launch, actions)
    assert job.cause == f"worker:1 ({launched[W1].task_id}) ended TASK_FAILED, exit code 1, {SHAPE}; {REPEAT}"
    assert job.job_restarts == 1


def test_a_different_exception_or_a_transient_one_is_relaunched_again():
    job = Job.new(spec_of(worker={"count": 2, "restart_policy": "OnFailure", "max_restarts": 5}), 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    now = 1.0
    unavailable = "tensorflow.python.framework.errors_impl.UnavailableError: Socket closed"
    for exception in (SHAPE, "KeyError: 'loss'", unavailable, unavailable, "KeyError: 'loss'"):
        fail(job, launched[W0].task_id, now, exception=exception)
        assert job.phase == PLACING, job.cause
        now += 100
        launched = relaunch_all(job, now)
    assert job.job_restarts == 5


def test_the_same_exception_ended_by_a_signal_or_without_one_is_relaunched():
    job = Job.new(spec_of(worker={"count": 1, "restart_policy": "OnFailure", "max_restarts": 5}), 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    now = 1.0
    for code, exception in ((1, ""), (1, ""), (137, SHAPE), (137, SHAPE)):
        fail(job, launched[W0].task_id, now, exit_code=code, exception=exception)
        assert job.phase == PLACING, job.cause
        now += 100
        launched = relaunch_all(job, now)


def test_the_last_failure_survives_a_scheduler_restart():
    job = Job.new(spec_of(worker={"count": 2, "restart_policy": "OnFailure", "max_restarts": 5}), 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    fail(job, launched[W0].task_id, 1.0, exception=SHAPE)
    job = Job.from_dict(job.spec, job.to_dict())
    launched = relaunch_all(job, 10.0)
    fail(job, launched[W0].task_id, 11.0, exception=SHAPE)
    assert job.ending == FAILED and job.cause.endswith(REPEAT)


def test_a_whole_job_restart_counts_in_every_relaunched_tasks_restarts():
    job = Job.new(spec_of(worker={"count": 3, "restart_policy": "OnFailure", "max_restarts": 5}), 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    fail(job, launched[TaskKey("worker", 1)].task_id, 1.0)
    launched = relaunch_all(job, 10.0)
    assert [t.restarts for t in job.snapshot().tasks] == [1, 1, 1]
    fail(job, launched[W0].task_id, 11.0)
    relaunch_all(job, 20.0)
    assert [t.restarts for t in job.snapshot().tasks] == [2, 2, 2]
    kept = Job.from_dict(job.spec, job.to_dict())
    assert [t.restarts for t in kept.snapshot().tasks] == [2, 2, 2]
    assert job.job_restarts == 2, "the job's own count is unchanged: one per whole-job restart"


def test_a_whole_job_restart_a_person_asked_for_is_no_failures_restart():
    job = Job.new(spec_of(worker={"count": 2, "restart_policy": "OnFailure", "max_restarts": 5}), 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    job.restart_task(W0, 1.0)
    relaunch_all(job, 10.0)
    assert [(t.restarts, t.requested_restarts) for t in job.snapshot().tasks] == [(0, 1), (0, 0)]
