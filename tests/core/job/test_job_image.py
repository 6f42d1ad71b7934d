"""A job whose image cannot start tfmesos' executor ends at once, naming job.image; the same
failures after the executor started are relaunched as before."""
import dataclasses

import pytest

from tfmesos.core import actions as act
from tfmesos.core.job import retry_policy
from tfmesos.core.job.job import Job
from tfmesos.core.task_state import StatusUpdate, TaskState
from tfmesos.core.spec import TaskKey

from tests.core.helpers import spec_of
from tests.core.job.test_job import launch_all, of, run_all

pytestmark = pytest.mark.unit
MISSING = "Failed to launch container: Failed to find archive for image 'x/y:1' at '/reg/x/y:1.tar'"


def image_job(image: str = "x/y:1") -> Job:
    spec = spec_of(worker={"count": 1, "restart_policy": "OnFailure", "max_restarts": 5})
    return Job.new(dataclasses.replace(spec, image=image), 0.0)


@pytest.mark.parametrize("reason, message", [("REASON_CONTAINER_LAUNCH_FAILED", MISSING),
                                             ("REASON_EXECUTOR_TERMINATED", "Executor terminated")])
def test_an_image_that_cannot_start_the_executor_ends_the_job_naming_job_image(reason, message):
    job = image_job()
    _, launched = launch_all(job)
    actions = job.status(StatusUpdate(launched[TaskKey("worker", 0)].task_id, TaskState.TASK_FAILED, reason=reason,
                                      message=message, agent_id="S0"), 0.5)
    assert not of(act.Launch, actions) and job.tasks[TaskKey("worker", 0)].restarts == 0
    assert "$.job.image 'x/y:1'" in job.cause and message in job.cause and reason in job.cause


def test_the_same_reasons_after_the_task_ran_or_without_an_image_are_relaunched():
    job = image_job()
    _, launched = launch_all(job)
    run_all(job, launched)
    job.status(StatusUpdate(launched[TaskKey("worker", 0)].task_id, TaskState.TASK_FAILED, reason="REASON_EXECUTOR_TERMINATED",
                            agent_id="S0"), 1.0)
    assert job.tasks[TaskKey("worker", 0)].restarts == 1 and not job.cause

    assert retry_policy.should_retry("OnFailure", retry_policy.Ending("TASK_FAILED", "REASON_CONTAINER_LAUNCH_FAILED"))[0]
    assert not retry_policy.should_retry("Always", retry_policy.Ending("TASK_FAILED", "REASON_CONTAINER_LAUNCH_FAILED",
                                                             image="x/y:1"))[0]


@pytest.mark.parametrize("image, python, expected", [("x/y:1", "", "python3"), ("x/y:1", "/opt/v/bin/python", "/opt/v/bin/python"),
                                                     ("", "", "/sched/venv/bin/python")])
def test_the_executor_python_in_an_image_is_the_images_python3_unless_job_python_says(image, python, expected):
    from tfmesos.core.actions import TaskLaunch
    from tfmesos.mesos.messages import decode
    from tfmesos.mesos.taskinfo import ExecutorSettings, OfferLedger, build_task_info
    from tfmesos.core.spec import Resources

    spec = dataclasses.replace(spec_of(worker={"count": 1}), image=image, python=python)
    offer = {"resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": 4}},
                           {"name": "mem", "type": "SCALAR", "scalar": {"value": 4096}},
                           {"name": "ports", "type": "RANGES", "ranges": {"range": [{"begin": 9000, "end": 9010}]}}]}
    # What runner passes: job.python, else the scheduler's own interpreter.
    settings = ExecutorSettings(python=python or "/sched/venv/bin/python")
    info = build_task_info(spec, TaskLaunch(TaskKey("worker", 0), "t.worker.0.1", 9000, Resources(1, 1024), 0), "a1",
                           OfferLedger(offer), settings)
    assert info["executor"]["command"]["value"] == f"exec {expected} -m tfmesos.executor"
    assert decode(info["data"]).python == expected  # $TFMESOS_PYTHON in the task


def test_the_embedded_master_refuses_an_image_before_anything_starts():
    from tfmesos.scheduler.preflight import local_fit_problems
    from tfmesos.scheduler.runner import RunSettings

    spec = spec_of(worker={"count": 1})
    assert local_fit_problems(spec, RunSettings()) == []
    [problem] = local_fit_problems(dataclasses.replace(spec, image="x/y:1"), RunSettings())
    assert problem.startswith("$.job.image: 'x/y:1': the embedded master runs tasks as plain processes, not in images")
    assert "--master with a Mesos agent that runs Docker images" in problem
