"""What a person is told (core/state/notices.py): composed in one place, a task's end in one line
from one event, the same text on the console (take) and in the job's events (the page, the record)."""
from __future__ import annotations

from tfmesos.core import actions as act
from tfmesos.core.job.job import Job
from tfmesos.core.phase import FAILED
from tfmesos.core.spec import TaskKey
from tfmesos.core.state import notices
from tfmesos.core.state.notices import Notice, Outcome, TaskEnd
from tfmesos.core.state.record import Transient
from tfmesos.core.task_state import StatusUpdate, TaskState

from tests.core.helpers import offer, spec_of

W0 = TaskKey("worker", 0)


def _running(**worker) -> tuple[Job, dict[TaskKey, str]]:
    job = Job.new(spec_of(ps={"count": 1}, worker={"count": 2, **worker}), 0.0)
    launched = {t.key: t.task_id for a in job.offers([offer(0, cpus=8)], 1.0) if isinstance(a, act.Launch)
                for t in a.tasks}
    for key, tid in launched.items():
        job.status(StatusUpdate(tid, TaskState.TASK_RUNNING, agent_id="S0"), 2.0)
    job.take_notices()
    return job, launched


def test_a_relaunched_failure_is_one_line_the_console_and_the_events_share():
    job, launched = _running(restart_policy="OnFailure")
    job.status(StatusUpdate(launched[W0], TaskState.TASK_FAILED, reason="REASON_EXECUTOR_TERMINATED",
                            message="Executor terminated", agent_id="S0"), 3.0)
    told = job.take_notices()
    line = "worker:0 TASK_FAILED (REASON_EXECUTOR_TERMINATED) (Executor terminated): relaunch #1 in 1.0s"
    assert told == [Notice(line)], "one line, not the update's and the decision's apart"
    assert job.events[-1] == line and job.take_notices() == []


def test_a_job_s_failure_is_told_once_as_its_end_with_the_task_s_end_as_its_cause():
    job, launched = _running()
    job.status(StatusUpdate(launched[W0], TaskState.TASK_FAILED, exit_code=3, exception="ValueError: bad",
                            agent_id="S0"), 3.0)
    cause = f"worker:0 ({launched[W0]}) ended TASK_FAILED, exit code 3, ValueError: bad; not relaunched: restart policy Never"
    told = [n for n in job.take_notices() if "worker:0" in n.text]
    assert told == [Notice(f"failed: {cause}", end=FAILED)] and job.cause == cause


def test_live_states_and_ends_that_decide_nothing_are_told_as_mesos_said_them_and_not_kept():
    job, launched = _running(restart_policy="OnFailure")
    job.status(StatusUpdate(launched[W0], TaskState.TASK_STARTING, agent_id="S0"), 2.0)  # a duplicate: still told
    job.stop("stopped by SIGINT (Ctrl-C)", 3.0)
    job.status(StatusUpdate(launched[W0], TaskState.TASK_KILLED, message="killed (exit code 143)", agent_id="S0"), 4.0)
    texts = [(n.text, n.recorded) for n in job.take_notices()]
    assert texts == [("worker:0 TASK_STARTING", False), ("stopped by SIGINT (Ctrl-C)", True),
                     ("worker:0 TASK_KILLED: killed (exit code 143)", False)]
    assert job.events[-1] == "stopped by SIGINT (Ctrl-C)"


def test_a_reconciliation_answer_is_told_once_per_task_until_the_next_subscription():
    job, launched = _running()
    answer = StatusUpdate(launched[W0], TaskState.TASK_RUNNING, reason="REASON_RECONCILIATION", agent_id="S0")
    job.status(answer, 5.0)
    job.status(answer, 5.1)  # implicit reconciliation answers again
    assert [n.text for n in job.take_notices()] == ["worker:0 TASK_RUNNING (REASON_RECONCILIATION)"]
    job.start()  # subscribed again
    job.status(answer, 6.0)
    assert [n.text for n in job.take_notices()] == ["worker:0 TASK_RUNNING (REASON_RECONCILIATION)"]


def test_every_outcome_of_a_task_s_end_has_its_line():
    failed = StatusUpdate("t.worker.0.3", TaskState.TASK_FAILED, exit_code=2, message="x" * 300)
    assert notices.text(TaskEnd(W0, failed, Outcome.FAILS_JOB, "max_restarts (0) reached")) == (
        f"worker:0 (t.worker.0.3) ended TASK_FAILED, exit code 2, {'x' * 200!r}; not relaunched: max_restarts (0) reached")
    assert notices.text(TaskEnd(W0, failed, Outcome.GOES_ON, "restart policy Never")).endswith(
        "not relaunched: restart policy Never; the job goes on without it")
    assert notices.text(TaskEnd(W0, failed, Outcome.RELAUNCHED, delay=2.0, number=3, whole_job=True)) == (
        "worker:0 TASK_FAILED exit 2: relaunch #3 in 2.0s with the whole job from its checkpoint")
    lost = StatusUpdate("t.worker.0.3", TaskState.TASK_LOST, reason="REASON_INVALID_OFFERS")
    assert notices.text(TaskEnd(W0, lost, Outcome.NEVER_LAUNCHED, delay=1.0)) == (
        "worker:0 TASK_LOST (REASON_INVALID_OFFERS): its launch never reached an agent: placed again in 1.0s")
    assert notices.text(TaskEnd(W0, lost)) == "worker:0 TASK_LOST (REASON_INVALID_OFFERS)"


def test_a_task_s_state_is_composed_when_taken_not_per_update():
    tr = Transient()
    update = StatusUpdate("t.worker.0.1", TaskState.TASK_STARTING, message="starting")
    notices.task_update(tr, W0, update)
    assert tr.told == [(W0, update)], "kept as it came: 3,000 updates of a 1,000-task job cost no text"
    assert notices.take(tr) == [Notice("worker:0 TASK_STARTING: starting", recorded=False)] and tr.told == []


def test_a_kill_says_its_exit_the_same_way_in_its_end_and_the_task_table():
    """A process the kill's SIGTERM ended (exit 143), one that ended itself on it (TensorFlow's server:
    exit 0), one SIGKILLed after the grace period (137): each a kill, said alike."""
    from tfmesos.api.status_text import task_row

    for code, said in ((143, "exit 143 (killed by SIGTERM)"), (0, "exit 0 (ended when asked to stop)"),
                       (137, "exit 137 (killed by SIGKILL)")):
        job, launched = _running(restart_policy="OnFailure")
        job.stop("stopped by SIGINT (Ctrl-C)", 3.0)
        job.status(StatusUpdate(launched[W0], TaskState.TASK_KILLED, message=f"killed (exit code {code})",
                                exit_code=code, agent_id="S0"), 4.0)
        assert f"worker:0 TASK_KILLED: {said}" in [n.text for n in job.take_notices()]
        row = next(t for t in job.snapshot().tasks if t.name == "worker:0")
        assert task_row(row).endswith(f"TASK_KILLED    restarts 0 {said}"), task_row(row)
