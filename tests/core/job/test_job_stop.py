"""Honest endings: a job stopped on request ends KILLED (no failure), the end survives a
scheduler restart, a relaunched task shows no exit code until its new attempt has one; and
what a stop signal means (scheduler/signal_steps.py)."""
from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tfmesos.core import actions as act
from tfmesos.core.job import finishing
from tfmesos.scheduler import signal_steps
from tfmesos.core.job.job import Job
from tfmesos.core.phase import ENDED_PHASES, FAILED, FINISHING, KILLED, PHASES, SUCCEEDED
from tfmesos.core.task_state import StatusUpdate, TaskState
from tfmesos.scheduler.metrics import JobMetrics
from tfmesos.scheduler.runner import STOPPED_EXIT, end_code
from tfmesos.core.spec import TaskKey
from tfmesos.api.status_text import task_row
# At collection, not in the test: importing deploy imports urllib3, whose import probes IPv6
# by binding a socket (a unit test's guard would take it for the test's own).
from tfmesos.client.logs import ENDED_PHASES as read_by_logs
from tfmesos.package.deploy import DONE_PHASES

from tests.core.helpers import offer, spec_of
from tests.core.job.test_job import PSS, launch_all, of, run_all


def _running_job() -> tuple[Job, dict]:
    job = Job.new(spec_of(**PSS), 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    return job, launched


def _end_all(job: Job, launched: dict, state: str, now: float) -> list[act.Action]:
    actions: list[act.Action] = []
    for t in launched.values():
        actions += job.status(StatusUpdate(t.task_id, state, exit_code=143), now)
    return actions


def test_a_stop_on_request_kills_every_task_and_ends_killed_without_a_failure():
    job, launched = _running_job()
    actions = job.stop("stopped by SIGINT (Ctrl-C)", 5.0)
    assert isinstance(actions[0], act.Persist), "the stop is on disk before the kills go out"
    assert {k.task_id for k in of(act.Kill, actions)} == {t.task_id for t in launched.values()}
    assert job.phase == FINISHING and not of(act.Done, actions)
    (done,) = of(act.Done, _end_all(job, launched, "TASK_KILLED", 6.0))
    assert (done.end, done.succeeded, done.cause) == (KILLED, False, "stopped by SIGINT (Ctrl-C)")
    assert job.phase == KILLED and job.terminal and job.succeeded is False
    assert job.snapshot().phase == KILLED
    assert not any("fail" in e.lower() for e in job.events), job.events
    assert job.events[-1] == "stopped by SIGINT (Ctrl-C)"


def test_a_closed_cluster_ends_closed_not_killed():
    from tfmesos.core.phase import CLOSED

    job, launched = _running_job()
    assert job.end_note() is None
    job.stop("cluster closed", 5.0, CLOSED)
    (done,) = of(act.Done, _end_all(job, launched, "TASK_KILLED", 6.0))
    assert (done.end, done.cause) == (CLOSED, "cluster closed") and job.snapshot().phase == CLOSED
    assert CLOSED in ENDED_PHASES and job.end_note() == "cluster closed"


def test_a_stop_while_the_job_is_ending_keeps_the_end_it_has():
    job, launched = _running_job()
    job.status(StatusUpdate(launched[TaskKey("chief", 0)].task_id, TaskState.TASK_FINISHED, exit_code=0), 5.0)
    assert job.phase == FINISHING
    assert job.stop("stopped on request (POST /v1/shutdown)", 5.5) == [act.Persist()]
    others = {k: t for k, t in launched.items() if k.role != "chief"}
    (done,) = of(act.Done, _end_all(job, others, "TASK_KILLED", 6.0))
    assert done.end == SUCCEEDED and job.phase == SUCCEEDED and done.cause == "chief:0 finished"


@pytest.mark.parametrize("end", [SUCCEEDED, FAILED])
def test_a_stop_may_carry_the_end_its_caller_knows(end):
    # tfrun runs worker 0 outside Mesos: the job ends as worker 0 did, not KILLED.
    job, launched = _running_job()
    job.stop("worker:0 (run here by tfrun) exited 0", 5.0, end)
    (done,) = of(act.Done, _end_all(job, launched, "TASK_KILLED", 6.0))
    assert done.end == end == job.phase and done.succeeded is (end == SUCCEEDED)


def test_a_stop_refuses_an_end_that_is_no_end():
    job, _ = _running_job()
    with pytest.raises(ValueError, match="not 'RUNNING'"):
        job.stop("why", 5.0, "RUNNING")


def test_a_failure_still_ends_failed_and_says_so():
    job, launched = _running_job()
    job.abort("an executor speaks another protocol", 1.0)
    (done,) = of(act.Done, _end_all(job, launched, "TASK_KILLED", 2.0))
    assert done.end == FAILED and job.events[-1] == "failed: an executor speaks another protocol"


def test_the_end_of_a_stopping_job_survives_a_scheduler_restart():
    job, launched = _running_job()
    job.stop("stopped by SIGTERM", 5.0)
    restarted = Job.from_dict(job.spec, job.to_dict())
    assert restarted.phase == FINISHING and restarted.ending == KILLED
    (done,) = of(act.Done, restarted.tick(5.0 + 60))  # the grace period over: ends as it was going to
    assert done.end == KILLED and restarted.phase == KILLED


@pytest.mark.parametrize("succeeded, phase", [(True, SUCCEEDED), (False, FAILED)])
def test_a_record_from_before_killed_existed_ends_as_its_succeeded_field_says(succeeded, phase):
    job, _ = _running_job()
    finishing.finish(job.state, job.transient, phase, "whatever", 5.0)
    old = job.to_dict()
    del old["ending"]  # written by a tfmesos without KILLED
    restarted = Job.from_dict(job.spec, old)
    assert restarted.ending == phase
    assert of(act.Done, restarted.tick(5.0 + 60))[0].end == phase


def test_a_relaunched_task_shows_no_exit_code_until_its_new_attempt_has_one():
    job, launched = _running_job()
    w1 = launched[TaskKey("worker", 1)]
    job.status(StatusUpdate(w1.task_id, TaskState.TASK_FAILED, exit_code=143, reason="REASON_COMMAND_EXECUTOR_FAILED",
                            message="Command exited with status 143", agent_id="S0"), 10.0)
    row = next(t for t in job.snapshot().tasks if (t.role, t.index) == ("worker", 1))
    assert row.exit_code == 143 and task_row(row).endswith("exit 143"), "the failed attempt shows its end"
    launches = of(act.Launch, job.offers([offer(5, cpus=8, mem=16384)], 20.0))
    (relaunch,) = [t for l in launches for t in l.tasks]
    job.status(StatusUpdate(relaunch.task_id, TaskState.TASK_RUNNING, agent_id="S5"), 21.0)
    row = next(t for t in job.snapshot().tasks if (t.role, t.index) == ("worker", 1))
    assert (row.state, row.restarts, row.exit_code, row.reason, row.message) == (
        "TASK_RUNNING", 1, None, "", ""), "the previous attempt's exit is not this one's"
    assert "exit" not in task_row(row)
    job.status(StatusUpdate(relaunch.task_id, TaskState.TASK_FAILED, exit_code=3, agent_id="S5"), 30.0)
    assert job.tasks[TaskKey("worker", 1)].exit_code == 3


def test_a_stopping_job_says_what_it_still_waits_for():
    job, launched = _running_job()
    job.stop("stopped by SIGINT (Ctrl-C)", 1.0)
    assert job.waiting_for() == ("4 task(s) to end: chief:0 TASK_RUNNING, ps:0 TASK_RUNNING, "
                                 "worker:0 TASK_RUNNING, worker:1 TASK_RUNNING")
    _end_all(job, {k: t for k, t in launched.items() if k.role != "ps"}, "TASK_KILLED", 2.0)
    assert job.waiting_for() == "1 task(s) to end: ps:0 TASK_RUNNING"
    _end_all(job, launched, "TASK_KILLED", 3.0)
    assert job.waiting_for() == "nothing of the job: it has ended"


def test_every_phase_reader_knows_killed():
    assert ENDED_PHASES == (SUCCEEDED, FAILED, KILLED, "CLOSED") and KILLED in PHASES and "CLOSED" in PHASES

    assert read_by_logs == DONE_PHASES == ENDED_PHASES
    job, launched = _running_job()
    job.stop("stopped on request (POST /v1/shutdown)", 1.0)
    _end_all(job, launched, "TASK_KILLED", 2.0)
    text = JobMetrics(job.snapshot).render()[0].decode()
    phases = {s.labels["phase"]: s.value for f in text_string_to_metric_families(text)
              if f.name == "tfmesos_job_phase" for s in f.samples}
    assert phases == {p: float(p == KILLED) for p in PHASES}


def test_the_steps_and_exit_codes_of_stop_signals():
    assert [signal_steps.step(n) for n in (1, 2, 3, 4)] == [signal_steps.STOP, signal_steps.EXPLAIN, signal_steps.GIVE_UP,
                                                        signal_steps.GIVE_UP]
    assert [signal_steps.exit_code(n) for n in (2, 15, 1)] == [130, 143, 129]
    assert signal_steps.cause("SIGINT") == "stopped by SIGINT (Ctrl-C)" and signal_steps.cause("SIGHUP") == "stopped by SIGHUP"
    assert [end_code(SUCCEEDED, None), end_code(FAILED, 130), end_code(KILLED, None), end_code(KILLED, 143)] == [
        0, 1, STOPPED_EXIT, 143]
    assert STOPPED_EXIT not in (0, 1, 2, 3, 4), "its own code, apart from the errors'"
