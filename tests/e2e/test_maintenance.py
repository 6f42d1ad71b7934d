"""A maintenance window scheduled 60 s ahead on worker:1's machine, mid-training, on the embedded
master (one machine per agent): the job's tasks move off it at a checkpoint before the window
opens, lose no step with max_restarts 0, nothing is placed there afterwards, the move is said,
and the inverse offer is accepted (tests/e2e/maintenance.py runs it; issue 38)."""
from __future__ import annotations

import json
import re

from tests.e2e.drains import AGENT_CPUS, AGENT_MEM, DRAIN_AFTER, MWMS_HANDLER, agents_for, gate_end, trained_to
from tests.e2e.harness import LocalMaster
from tests.e2e.maintenance import Window, run_window
from tests.e2e.planned_job import missing, twice


def test_a_window_60s_ahead_moves_the_tasks_before_it_opens_and_loses_no_step(tmp_path):
    master = LocalMaster(tmp_path / "m", agents=agents_for(MWMS_HANDLER), extra=[
        "--machine-per-agent", "--agent-cpus", str(AGENT_CPUS), "--agent-mem", str(AGENT_MEM)])
    try:
        window = run_window(tmp_path, master)
    finally:
        master.stop()
    assert_moved_in_time(window)


def assert_moved_in_time(window: Window) -> None:
    """The bars: succeeded, moved before the window opened, 0 steps twice or missing, nothing placed
    on that machine afterwards, the move said, the inverse offer accepted."""
    out = window.output
    assert re.search(r"job maint-mwms SUCCEEDED", out), out[-4000:]
    print(f"moved {window.opens_at - window.moved_at:.1f} s before the window opened")
    assert window.moved_at < window.opens_at, "the tasks moved before the window opened"
    total = trained_to(out)  # the gate: RESUMED steps past the move (tests/e2e/drains.py)
    assert total is not None and DRAIN_AFTER < total == gate_end(out, MWMS_HANDLER.every), (total, out[-4000:])
    for key, steps in window.steps.items():
        assert (twice(steps), missing(steps, total)) == ([], []), (key, twice(steps)[:10], missing(steps, total)[:10])
    assert window.on_machine and window.on_machine <= window.before, \
        f"placed on the machine in maintenance: {window.on_machine - window.before}"
    said = [line for line in out.splitlines() if "worker:1" in line and re.search(r"maintenance \(window opens in \d+ s\)", line)
            and "planned stop #1, not counted" in line]
    assert said, out[-4000:]  # the move said once, as a planned stop, with why
    statuses = [s for m in window.status.get("draining_machines", []) for s in m.get("statuses", [])]
    assert any(s.get("status") == "ACCEPT" for s in statuses), json.dumps(window.status)
