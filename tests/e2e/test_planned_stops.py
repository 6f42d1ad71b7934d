"""A planned stop loses no step, in each training mode, at the task level: real TensorFlow
processes on loopback ports with TF_CONFIG written by hand, as tfmesos starts them. The test
stands in for the executor and the scheduler only where the notice contract says they act
(docs/developers/architecture.md, "Planned stop: the notice"): it writes the notice file of each
task told, sends SIGTERM to the process group of each task stopped, then, once the job has saved
and stopped, starts the same processes again.

Every process appends the steps it ran to a log (tests/e2e/planned/steplog.py). Per task:
- a step ran **twice** when it appears more than once in that task's log, over both starts;
- a step is **missing** when it never appears, in range(steps the job trains).
MultiWorkerMirroredStrategy: each worker logs the steps it ran (a step is every worker's).
ParameterServerStrategy: the chief logs the steps it scheduled, once it has waited for them (the
workers are servers running no Python); a count of the updates applied on the ps proves each was
applied once: restored, it equals the steps logged before the stop; at the end, the steps trained.

Started again, the job trains RESUMED steps past the save, to the end of that epoch or checkpoint
(RESUMED_STEPS, tests/e2e/planned/steplog.py), not the rest of STEPS: ``trained_to`` is the step it
ends at, and the steps are counted in range(that).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.planned_job import Job, Outcome, missing, mwms, pss, twice
from tfmesos.task import notice

STEPS = 300  # 6 epochs of 50 steps
RESUMED = 100  # steps the second start trains past the save (to an epoch's or a checkpoint's end)


def trained_to(saved: int, every: int) -> int:
    """Where the second start ends (steplog.resumed_end): the first multiple of ``every`` RESUMED past the save."""
    return min(STEPS, -(-(saved + RESUMED) // every) * every)


@pytest.fixture
def work(tmp_path: Path):
    jobs: list[Job] = []
    yield tmp_path, jobs
    for job in jobs:
        job.stop()


def _lost_nothing(outcome: Outcome, total: int) -> None:
    for key, steps in outcome.steps.items():
        assert (twice(steps), missing(steps, total)) == ([], []), key


def _mwms(work, script: str, env: dict[str, str]) -> None:
    outcome = mwms(*work, script, {**env, "RESUMED_STEPS": str(RESUMED)}, stop_after=60)
    print(f"{script}: notice to exit {outcome.notice_to_exit_s:.1f} s")
    workers = [("worker", 0), ("worker", 1)]
    assert outcome.first_codes == {key: notice.PLANNED_EXIT for key in workers}, outcome.outputs
    saved = outcome.saved[("worker", 0)]
    assert outcome.saved[("worker", 1)] == saved and 60 <= saved < STEPS, outcome.saved  # the same step, mid-way
    assert outcome.second_codes == {key: 0 for key in workers}, outcome.outputs
    assert outcome.started_at == {key: saved for key in workers}
    _lost_nothing(outcome, trained_to(saved, 50))


def test_mwms_custom_loop_with_tensorflows_handler_saves_at_the_agreed_step_and_resumes_there(work) -> None:
    _mwms(work, "mwms_handler.py", {"TRAIN_STEPS": str(STEPS), "STEPS_PER_EPOCH": "50"})


def test_keras_mwms_fit_with_tfmesos_backup_saves_every_worker_at_the_same_batch(work) -> None:
    _mwms(work, "keras_mwms.py", {"TF_USE_LEGACY_KERAS": "1", "EPOCHS": "6", "STEPS_PER_EPOCH": "50"})


def _pss(work, script: str, env: dict[str, str], leaving: tuple[str, int], every: int) -> None:
    outcome = pss(*work, script, {**env, "RESUMED_STEPS": str(RESUMED)}, stop_after=60, leaving=leaving)
    print(f"{script}: notice to the chief's exit {outcome.notice_to_exit_s:.1f} s")
    chief = ("chief", 0)
    assert outcome.first_codes == {chief: notice.PLANNED_EXIT}, outcome.outputs
    if leaving != chief:  # a server told and stopped serves on until the chief has saved
        assert outcome.lingered
    assert set(outcome.server_codes.values()) == {0}
    saved = outcome.saved[chief]
    assert 60 <= saved < STEPS
    assert outcome.second_codes == {chief: 0}, outcome.outputs
    assert outcome.started_at == {chief: saved}
    total = trained_to(saved, every)
    assert outcome.applied == (saved, total)  # restored: the steps before the stop; at the end: all, once
    _lost_nothing(outcome, total)


def test_keras_pss_fit_chief_saves_at_the_batch_when_a_worker_leaves(work) -> None:
    _pss(work, "keras_pss.py", {"TF_USE_LEGACY_KERAS": "1", "EPOCHS": "6", "STEPS_PER_EPOCH": "50",
                                "STEPS_PER_EXECUTION": "5"}, leaving=("worker", 1), every=50)


def test_pss_custom_loop_chief_saves_at_the_step_when_its_own_agent_drains(work) -> None:
    _pss(work, "pss_loop.py", {"TRAIN_STEPS": str(STEPS), "CHECKPOINT_EVERY": "100"}, leaving=("chief", 0), every=100)
