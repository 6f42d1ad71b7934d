"""A drained agent against a kill -9 of the same task, per training mode, end to end: the
embedded master, each task on an agent of its own and one spare (tests/e2e/drains.py's cases),
real TensorFlow processes.

    .venv/bin/python -m benchmarks.run --only drain

Per mode and per stop (the drain of worker 1's agent, max_grace_period 60 s; or kill -9 of worker
1's process, one restart allowed):
- *steps lost*: steps trained twice or never (STEP_LOG, counted as the tests count them), in the
  task that lost most;
- *seconds to resumed*: from the drain (or the kill) asked to the first step trained again, once
  every attempt that trained before the stop has ended.
A drain saves at the step: 0 lost. A kill -9 loses the steps since the last checkpoint (the MWMS
scripts save only on a planned stop, so all of them; the PSS scripts every 100 steps or epoch).
"""
from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from benchmarks.common import log
from tests.e2e.drains import AGENT_CPUS, AGENT_MEM, KERAS_MWMS, KERAS_PSS, MWMS_HANDLER, PSS_LOOP, agents_for, run_drain
from tests.e2e.harness import LocalMaster

MODES = {m.name: m for m in (MWMS_HANDLER, KERAS_MWMS, KERAS_PSS, PSS_LOOP)}
LEAVING = ("worker", 1)


def _one(tmp: Path, mode_name: str, kill9: bool, sample: int) -> dict[str, Any]:
    mode = MODES[mode_name]
    work = tmp / f"drain-{mode_name}-{'kill9' if kill9 else 'drain'}-{sample}"
    work.mkdir(parents=True)
    master = LocalMaster(work / "m", agents=agents_for(mode), extra=[
        "--machine-per-agent", "--agent-cpus", str(AGENT_CPUS), "--agent-mem", str(AGENT_MEM)])
    try:
        done = run_drain(work, master, mode, LEAVING, kill9=kill9)
    finally:
        master.stop()
    row = {"steps_lost": done.steps_lost(), "to_resumed_s": round(done.notice_to_resumed_s, 2),
           "succeeded": done.succeeded}
    log(f"drain: {mode_name} {'kill -9' if kill9 else 'drain'}: {row}")
    return row


def run(tmp: Path, modes: tuple[str, ...] = tuple(MODES), samples: int = 1) -> dict[str, Any]:
    results: dict[str, Any] = {"leaving": f"{LEAVING[0]}:{LEAVING[1]}", "modes": {}}
    for name in modes:
        per: dict[str, Any] = {}
        for stop, kill9 in (("drain", False), ("kill9", True)):
            rows = [_one(tmp, name, kill9, i) for i in range(samples)]
            per[stop] = {"samples": rows,
                         "median_steps_lost": statistics.median(r["steps_lost"] for r in rows),
                         "median_to_resumed_s": round(statistics.median(r["to_resumed_s"] for r in rows), 2)}
        results["modes"][name] = per
    return results
