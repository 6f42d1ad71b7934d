"""``tfmesos update`` on a running ParameterServerStrategy job, end to end on the embedded master
with real TensorFlow: the PSS custom loop with tfmesos' planned-stop recipe
(tests/e2e/planned/pss_loop.py: the chief logs the steps it scheduled once they ran), its workers'
env changed mid-training.

What docs/commands.md promises for it: a ParameterServer worker's own env restarts the workers,
not the whole job: they stop at a planned stop and are relaunched with the new values, with the
chief, which saves at the step (it must learn the workers' new addresses) and resumes there; the
ps runs on. Nothing is counted against ``max_restarts``, no step is trained twice or lost, the
plan says what restarts, and the update is one of the job's events, its values never shown.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import psutil

from tests.e2e.drains import PSS_LOOP, RESUMED, STEPS, TASK, agents_for, start_logged, tasks_of, trained_to
from tests.e2e.harness import TFMESOS, LineProcess, LocalMaster, eventually, find_task_process, stop_scheduler
from tests.e2e.planned_job import missing, steps_by_task, twice

NAME = "update-pss"
FIRST, SECOND = "m7e1a", "m9c4b"  # the workers' UPDATE_MARK before and after: values no console line has
UPDATE_AFTER = 150  # steps the chief has logged when the update is sent: past a checkpoint, mid-training


def _roles(mark: str) -> dict:
    roles = {role: {**TASK, **opts} for role, opts in PSS_LOOP.roles.items()}
    roles["worker"]["env"] = [f"UPDATE_MARK={mark}"]
    return roles


def _marks(count: int) -> list[str | None]:
    """UPDATE_MARK of each worker's running process (None where there is none)."""
    marks: list[str | None] = []
    for index in range(count):
        proc = find_task_process(NAME, "worker", index)
        try:
            marks.append(proc.environ().get("UPDATE_MARK") if proc is not None else None)
        except psutil.Error:  # ended meanwhile
            marks.append(None)
    return marks


def _attempts(state: dict, role: str, index: int) -> list[str]:
    return [t["id"] for t in tasks_of(state, NAME) if t["id"].startswith(f"{NAME}.{role}.{index}.")]


def test_an_env_update_of_pss_workers_restarts_them_alone_and_loses_no_step(tmp_path: Path) -> None:
    master = LocalMaster(tmp_path / "m", agents=agents_for(PSS_LOOP), extra=["--agent-cpus", "1", "--agent-mem", "1500"])
    log = tmp_path / "steps.log"
    run = start_logged(tmp_path, master, PSS_LOOP, NAME, _roles(FIRST), log)
    try:
        eventually(lambda: len(steps_by_task(log)[("chief", 0)]) >= UPDATE_AFTER or run.proc.poll() is not None, 300,
                   f"the chief to log {UPDATE_AFTER} steps")
        assert run.proc.poll() is None, run.output[-5000:]
        assert _marks(2) == [FIRST, FIRST], run.output[-3000:]
        before = master.state()
        ps = _attempts(before, "ps", 0)
        options = tmp_path / "o.json"  # start_logged's options: rewritten with the workers' new env
        updated = tmp_path / "updated.json"
        updated.write_text(options.read_text().replace(f"UPDATE_MARK={FIRST}", f"UPDATE_MARK={SECOND}"))
        done = LineProcess(TFMESOS + ["update", NAME, str(updated), "--state-dir", str(tmp_path / "state")],
                           env=dict(os.environ))
        assert done.wait(60) == 0, done.output
        assert "$.roles.worker.env: 1 variable -> UPDATE_MARK changed" in done.output, done.output
        assert re.search(r"restarts: worker:0, worker:1 stop at a planned stop .*; chief:0 saves at the step and "
                         r"restarts with them", done.output), done.output
        assert SECOND not in done.output, "an env value shown"
        eventually(lambda: _marks(2) == [SECOND, SECOND], 300,
                   "both workers relaunched with the update's env\n" + run.output[-3000:])
        assert run.wait(900) == 0, run.output[-5000:]
        after = master.state()
    finally:
        stop_scheduler(run)
        (tmp_path / "console.txt").write_text(run.output)
        master.stop()
    out = run.output
    assert re.search(rf"job {NAME} SUCCEEDED", out), out[-4000:]
    assert "updated: $.roles.worker.env: 1 variable -> UPDATE_MARK changed" in out, out[-4000:]
    assert SECOND not in out and FIRST not in out, "an env value in the console"
    assert _attempts(after, "ps", 0) == ps and len(ps) == 1, "the ps ran on"
    saved = re.search(r"chief:0 saved at step (\d+) for the planned stop \(tfmesos update\) \(planned stop #1, "
                      r"not counted against max_restarts\)", out)
    assert saved and UPDATE_AFTER <= int(saved.group(1)) < STEPS, out[-4000:]
    total = trained_to(out)  # resumed at the save, the chief trains RESUMED more steps, to a checkpoint
    assert total == min(STEPS, -(-(int(saved.group(1)) + RESUMED) // 100) * 100), (total, out[-4000:])
    for key in (("chief", 0), ("worker", 0), ("worker", 1)):  # each stopped once, at the update, and launched again
        assert len(_attempts(after, *key)) == 2, (key, _attempts(after, *key))
    steps = steps_by_task(log)[("chief", 0)]
    assert (twice(steps), missing(steps, total)) == ([], []), (twice(steps)[:10], missing(steps, total)[:10])
