"""The task table and progress line shared by `tfmesos run` and `tfmesos status`."""
from __future__ import annotations

from tfmesos.api.status_text import progress_text, task_row
from tfmesos.core.status import Progress, TaskStatus


def _task(**over):
    return TaskStatus(**{"role": "worker", "index": 1, "endpoint": "127.0.0.1:31001", "state": "TASK_RUNNING",
                         "restarts": 2, "exit_code": None, **over})


def test_task_row_shows_where_state_and_restarts() -> None:
    row = task_row(_task())
    assert row.split() == ["worker:1", "127.0.0.1:31001", "TASK_RUNNING", "restarts", "2"]


def test_task_row_adds_asked_for_restarts_and_the_exit_code() -> None:
    row = task_row(_task(state="TASK_FINISHED", requested_restarts=1, exit_code=0, endpoint=None))
    assert row.split() == ["worker:1", "-", "TASK_FINISHED", "restarts", "2", "(+1", "asked", "for)", "exit", "0"]


def test_task_row_counts_planned_stops_apart_from_restarts() -> None:
    row = task_row(_task(restarts=0, planned_stops=1))
    assert row.split() == ["worker:1", "127.0.0.1:31001", "TASK_RUNNING", "restarts", "0", "(+1", "planned)"]


def test_task_row_ends_with_the_exception_that_ended_the_task() -> None:
    row = task_row(_task(state="TASK_FAILED", exit_code=1, exception="KeyError: 'loss'"))
    assert row.endswith("TASK_FAILED    restarts 2 exit 1  KeyError: 'loss'"), row


def test_progress_line_has_a_bar_when_the_total_is_known() -> None:
    text = progress_text("chief:0", Progress(step=50, total_steps=200, loss=0.25, at=1.0), width=8)
    assert text == "chief:0 [##......] step 50/200 (25%) loss 0.25"
    assert progress_text("chief:0", Progress(step=7)) == "chief:0 step 7"


def test_a_queued_job_shows_the_same_phase_in_status_and_jobs(capsys) -> None:
    from tfmesos.client.cli import _print_live
    from tfmesos.client.history import running_lines
    from tfmesos.core.status import StatusSnapshot

    why = "queued (the cluster fits the job, but not now): needs cpus 1.8, mem 2176 MB"
    snap = StatusSnapshot(name="q", phase="PLACING", mode="collective", started_at=0.0, queued=why,
                          queued_since=1.0, now=5.0)
    _print_live(snap, as_json=False)
    status = capsys.readouterr().out.splitlines()
    assert status[0].startswith("job q  phase QUEUED  "), status
    assert running_lines([snap])[0].startswith("q  QUEUED  for"), running_lines([snap])
    placing = StatusSnapshot(name="p", phase="PLACING", mode="collective", started_at=0.0, now=5.0)
    _print_live(placing, as_json=False)
    assert capsys.readouterr().out.startswith("job p  phase PLACING  ")
    assert running_lines([placing])[0].startswith("p  PLACING  for")
