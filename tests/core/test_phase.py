"""The job's phases as a machine (core/phase.py): one function moves a job, by one table; any
other move is refused with its from, to and reason."""
from __future__ import annotations

import itertools

import pytest

from tfmesos.core import actions as act
from tfmesos.core.job.job import Job
from tfmesos.core.phase import (ENDED_PHASES, FAILED, FINISHING, KILLED, MOVES, PLACING, RUNNING, IllegalMove,
                                JobPhase, move)
from tfmesos.core.task_state import StatusUpdate, TaskState

from tests.core.helpers import offer, spec_of, state_of


def test_every_move_of_the_table_is_made_and_stamps_when_it_entered_placing_or_finishing():
    for (from_, to), meaning in MOVES.items():
        job, _ = state_of(spec_of(worker={"count": 1}))
        job.phase = from_
        move(job, to, 42.0, "test")
        assert job.phase == to and meaning
        assert job.placing_since == (42.0 if to == PLACING else 0.0)
        assert job.finishing_since == (42.0 if to == FINISHING else 0.0)


def test_a_move_outside_the_table_is_an_error_with_from_to_and_reason():
    refused = [(a, b) for a, b in itertools.product(JobPhase, JobPhase) if (a, b) not in MOVES]
    assert (FAILED, PLACING) in refused and (RUNNING, FAILED) in refused and (PLACING, KILLED) in refused
    for from_, to in refused:
        job, _ = state_of(spec_of(worker={"count": 1}))
        job.phase = from_
        with pytest.raises(IllegalMove) as caught:
            move(job, to, 1.0, "because")
        assert (caught.value.from_, caught.value.to, caught.value.reason) == (from_, to, "because")
        assert job.phase == from_, "an illegal move changes nothing"
    assert str(IllegalMove(FAILED, PLACING, "a whole-job restart")) == (
        "the job cannot move from FAILED to PLACING (a whole-job restart): from FAILED it moves to nothing (it has ended)")


def test_an_ended_phase_is_final_and_only_finishing_leads_to_one():
    assert not any(a in ENDED_PHASES for a, _ in MOVES)
    assert {a for a, b in MOVES if b in ENDED_PHASES} == {FINISHING}
    assert all(p.ended == (p in ENDED_PHASES) for p in JobPhase)


def test_a_task_end_that_comes_after_the_grace_changes_nothing():
    """FINISHING's grace over with a kill unconfirmed: the job has ended FAILED. The late TASK_KILLED
    once relaunched the task under OnFailure (and a whole-job restart took an ended job back to PLACING)."""
    job = Job.new(spec_of(worker={"count": 2, "restart_policy": "OnFailure"}), 0.0)
    launched = [t for a in job.offers([offer(0, cpus=8)], 1.0) if hasattr(a, "tasks") for t in a.tasks]
    for t in launched:
        job.status(StatusUpdate(t.task_id, TaskState.TASK_RUNNING, agent_id="S0"), 2.0)
    job.abort("an executor of another protocol", 3.0)
    job.tick(40.0)  # the grace is over: the end comes with both kills unconfirmed
    assert job.phase == FAILED
    events = list(job.events)
    actions = job.status(StatusUpdate(launched[0].task_id, TaskState.TASK_KILLED, agent_id="S0"), 41.0)
    assert actions == [act.Persist()], "the task's end is recorded, nothing is relaunched or killed"
    assert job.phase == FAILED and job.events == events and job.job_restarts == 0
