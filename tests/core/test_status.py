"""The status snapshot is one typed, versioned definition (tfmesos.core.status): what the core
builds is what the JSON holds, a JSON round trip changes nothing, a newer version is refused and a
snapshot from before versioning still reads."""
from __future__ import annotations

import dataclasses
import json

import pytest

from tfmesos.core.job.job import Job
from tfmesos.core.status import VERSION, NewerStatusError, Progress, StatusSnapshot, TaskStatus

from tests.core.helpers import spec_of
from tests.core.job.test_job import PSS, launch_all, run_all


def _running_job() -> Job:
    job = Job.new(spec_of(**PSS), 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    chief = next(rec for key, rec in launched.items() if key.role == "chief")
    job.report(chief.task_id, {"step": 40, "loss": 0.25, "total_steps": 400, "accuracy": 0.5, "note": "warm"}, 1.0)
    job.report(chief.task_id, {"step": 80, "loss": None}, 2.0)  # a value reported as null stays a value
    return job


def _fields(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def test_the_json_holds_the_dataclass_fields_and_nothing_else() -> None:
    snap = _running_job().snapshot()
    data = snap.to_json()
    assert set(data) == _fields(StatusSnapshot) and data["version"] == VERSION
    for task in data["tasks"]:
        assert set(task) == _fields(TaskStatus)
    named = {"at", "step", "total_steps", "loss", "fraction"}
    assert named | {"metrics"} == _fields(Progress), "the named progress values are the fields, the rest metrics"
    assert data["progress"] == {"at": 2.0, "step": 80, "total_steps": 400, "loss": None, "accuracy": 0.5,
                                "note": "warm", "fraction": 0.2}
    assert snap.progress == Progress(at=2.0, step=80, total_steps=400, fraction=0.2,
                                     metrics={"loss": None, "accuracy": 0.5, "note": "warm"})


def test_a_json_round_trip_is_the_identity() -> None:
    snap = dataclasses.replace(_running_job().snapshot(), framework_id="F-1", connected=True, now=3.0,
                               master="127.0.0.1:5050", ended_at=4.0)
    served = json.loads(json.dumps(snap.to_json()))
    assert StatusSnapshot.from_json(served) == snap
    assert StatusSnapshot.from_json(served).to_json() == served
    assert snap.series and snap.tasks and all(isinstance(t, TaskStatus) for t in snap.tasks)


def test_the_snapshot_is_frozen() -> None:
    snap = _running_job().snapshot()
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.phase = "FAILED"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.tasks[0].state = "TASK_LOST"  # type: ignore[misc]


def test_a_newer_version_is_refused_naming_both() -> None:
    served = _running_job().snapshot().to_json()
    with pytest.raises(NewerStatusError) as refused:
        StatusSnapshot.from_json({**served, "version": VERSION + 1})
    assert f"version {VERSION + 1}" in str(refused.value) and f"up to version {VERSION}" in str(refused.value)
    assert "upgrade tfmesos" in str(refused.value)
    for bad in ({**served, "version": "1"}, {**served, "version": -1}, {"phase": "RUNNING"}, ["not", "a", "status"]):
        with pytest.raises(ValueError):
            StatusSnapshot.from_json(bad)


def test_a_snapshot_from_before_versioning_still_reads() -> None:
    """What a scheduler served before the snapshot had a version (and before it served the
    master, the series or the asked-for restarts): it reads as this version, missing fields at
    their defaults; fields this tfmesos does not know are left out."""
    old = {"name": "mnist", "phase": "RUNNING", "mode": "pss", "succeeded": False, "cause": "", "job_restarts": 1,
           "clusterspec_version": 2, "started_at": 10.0, "progress": {"step": 5, "at": 11.0},
           "tasks": [{"role": "ps", "index": 0, "task_id": "mnist.ps.0.1", "endpoint": "h:1", "agent_id": "S0",
                      "state": "TASK_RUNNING", "restarts": 0, "exit_code": None, "reason": "", "message": "",
                      "progress": None, "gone": 1}],
           "tensorboard": None, "events": ["placed"], "framework_id": "F-1", "connected": True, "now": 12.0,
           "retired_field": 1}
    snap = StatusSnapshot.from_json(old)
    assert (snap.version, snap.name, snap.job_restarts, snap.master, snap.series) == (VERSION, "mnist", 1, None, ())
    assert snap.progress == Progress(at=11.0, step=5)
    assert snap.tasks == (TaskStatus(role="ps", index=0, task_id="mnist.ps.0.1", endpoint="h:1", agent_id="S0",
                                     state="TASK_RUNNING"),)
    assert snap.events == ("placed",)


def test_a_named_progress_value_that_is_no_number_keeps_its_name() -> None:
    reported = {"step": "warm-up", "loss": True, "at": 1.0, "lr": 0.1}
    progress = Progress.from_json(reported)
    assert progress.step is None and progress.loss is None and progress.at == 1.0
    assert progress.to_json() == reported
