"""``python -m benchmarks.run [--out FILE] [--quick] [--only NAMES]``: every benchmark, one results file.

Writes FILE (JSON: the environment, every sample, medians, ratios, verdicts) and ``RESULTS.md``
next to it (the table docs/developers/benchmarks.md quotes). ``make bench`` runs the full set (about 15 minutes on
2 cores); ``make bench-quick`` (``--quick``) is a smoke run of every part (about 4 minutes; one
sample each, so its figures are not medians and its ratios are only indicative).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from benchmarks import (bringup, busy, drain, executor_start, history, long_master, master_scale, placement, real_gang,
                        recovery, scale, start_end, taskinfo_bytes)
from benchmarks.common import environment, log
from benchmarks.report import render

PARTS = ("placement", "master", "scale", "bringup", "pinned", "makerun", "recovery", "history", "startend", "coldexec",
         "longmaster", "busy", "realgang", "drain", "taskinfo")
DEFAULT_PARTS = PARTS
# With one CPU, TensorFlow sizes its inter-op pool to 1 and the parameter-server job deadlocks
# (the chief waits for a step the idle workers never run): the pinned pair gives both arms the
# pool sizes of a 4-thread machine, through the job's environment.
PINNED_TF = ("TF_NUM_INTEROP_THREADS=4", "TF_NUM_INTRAOP_THREADS=1")

FULL = {
    # Training speed and bring-up: the main example with 2000 steps, tfmesos vs by hand.
    "bringup": {"pairs": 3, "steps": 2000, "imports_per_pair": 1},
    # The same pair with both arms' processes on CPU 0 only (taskset -c 0).
    "pinned": {"pairs": 2, "steps": 1000, "imports_per_pair": 0, "pin": (0,), "env": PINNED_TF},
    # `make run` as it is (400 steps): the CPU share of tfmesos' own processes in a whole job.
    "makerun": {"pairs": 2, "steps": 400, "imports_per_pair": 0},
    "recovery": {"runs": 2},
    "placement": {"task_sizes": (10, 100, 1000), "agent_sizes": (100, 1000, 10000), "repeats": 3},
    "scale": {"configs": ((1000, 10, 2), (1000, 100, 3), (1000, 1000, 3)), "probes": 3},
    "master": {"sizes": (1000, 10000)},
    "history": {"samples": 5},
    # A tiny tfmesos run: command start -> first launch, chief exit -> command exit (issue 20).
    "startend": {"samples": 7},
    # A cold python -m tfmesos.executor (no fork server): CPU to SUBSCRIBE and to TASK_RUNNING (issue 20).
    "coldexec": {"samples": 15},
    # One local-master, 200 small jobs one after another then 200 twenty at a time: RSS, fds, threads (issue 31).
    "longmaster": {"jobs": 200, "parallel": 20, "warmup": 60},
    # A busy cluster (issue 31): four jobs on a cluster that fits two; a gang before twenty small jobs.
    "busy": {"small_jobs": 20},
    # The 100-task gang on three real Mesos agents (skipped, saying why, where Mesos is not installed):
    # tfmesos, Mesos' command executor and the least custom executor (the floor), interleaved (issue 30).
    "realgang": {"rounds": 3},
    # A drained agent against kill -9 of the same task, per training mode (issue 38).
    "drain": {"samples": 1},
    # A gang's TaskInfo bytes at 10, 100 and 1,000 workers (issue 40); TASKINFO_BASELINE=DIR: another
    # commit's tree measured beside it.
    "taskinfo": {"sizes": (10, 100, 1000)},
}
QUICK = {
    "bringup": {"pairs": 1, "steps": 300, "imports_per_pair": 1},
    "pinned": {"pairs": 1, "steps": 300, "imports_per_pair": 0, "pin": (0,), "env": PINNED_TF},
    "makerun": {"pairs": 1, "steps": 400, "imports_per_pair": 0},
    "recovery": {"runs": 1},
    "placement": {"task_sizes": (10, 100), "agent_sizes": (100, 1000), "repeats": 3},
    "scale": {"configs": ((200, 10, 1), (200, 100, 1)), "probes": 1},
    "master": {"sizes": (1000,)},
    "history": {"samples": 1},
    "startend": {"samples": 2},
    "coldexec": {"samples": 3},
    "longmaster": {"jobs": 20, "parallel": 10, "warmup": 5},
    "busy": {"small_jobs": 8},
    "realgang": {"rounds": 1},
    "drain": {"samples": 1, "modes": ("mwms-handler",)},
    "taskinfo": {"sizes": (10, 100)},
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results.json"), help="results JSON (RESULTS.md goes next to it)")
    parser.add_argument("--quick", action="store_true", help="smoke mode: every part once, small sizes (~4 min)")
    parser.add_argument("--only", default=",".join(DEFAULT_PARTS), help=f"comma-separated subset of {','.join(PARTS)}")
    parser.add_argument("--keep-logs", action="store_true", help="keep the scheduler consoles and sandboxes (printed path)")
    parser.add_argument("--hand-own-sessions", action="store_true",
                        help="start each hand-launched task in a session of its own, as Mesos starts containers")
    parser.add_argument("--render", action="store_true", help="only rewrite RESULTS.md (and the verdicts) from --out")
    args = parser.parse_args(argv)
    if args.render:
        results = json.loads(args.out.read_text())
        md, results["verdicts"] = render(results)
        args.out.write_text(json.dumps(results, indent=1, default=str) + "\n")
        (args.out.parent / "RESULTS.md").write_text(md)
        return 0
    only = [p for p in args.only.split(",") if p]
    unknown = set(only) - set(PARTS)
    if unknown:
        parser.error(f"unknown part(s): {', '.join(sorted(unknown))}")
    settings = QUICK if args.quick else FULL

    started = time.monotonic()
    results: dict[str, Any] = {
        "mode": "quick" if args.quick else "full",
        "environment": environment(),
        "settings": {k: settings[k] for k in only} | {"hand_own_sessions": args.hand_own_sessions},
    }
    tmp = Path(tempfile.mkdtemp(prefix="tfmesos-bench-"))
    log(f"benchmarks ({results['mode']}): {', '.join(only)}; work files under {tmp}")
    try:
        for part in PARTS:
            if part not in only:
                continue
            t = time.monotonic()
            try:
                if part == "placement":
                    log("placement: Job.offers -> place on synthetic offers")
                    results["placement"] = placement.run(**settings["placement"])
                elif part == "scale":
                    results["scale"] = scale.run(tmp, **settings["scale"])
                elif part == "master":
                    results["master"] = master_scale.run(tmp, **settings["master"])
                elif part in ("bringup", "pinned", "makerun"):
                    kw = dict(settings[part])
                    kw["pin"] = set(kw.get("pin") or ()) or None
                    results[part] = bringup.run(tmp, **kw, own_sessions=args.hand_own_sessions,
                                                label={"bringup": "bring-up/training", "pinned": "pinned (taskset)",
                                                       "makerun": "make run job"}[part])
                elif part == "recovery":
                    results["recovery"] = recovery.run(tmp, **settings["recovery"])
                elif part == "history":
                    results["history"] = history.run(tmp, **settings["history"])
                elif part == "startend":
                    results["startend"] = start_end.run(tmp, **settings["startend"])
                elif part == "coldexec":
                    results["coldexec"] = executor_start.run(tmp, **settings["coldexec"])
                elif part == "longmaster":
                    results["longmaster"] = long_master.run(tmp, **settings["longmaster"])
                elif part == "busy":
                    results["busy"] = busy.run(tmp, **settings["busy"])
                elif part == "realgang":
                    results["realgang"] = real_gang.run(tmp, **settings["realgang"])
                elif part == "drain":
                    results["drain"] = drain.run(tmp, **settings["drain"])
                elif part == "taskinfo":
                    baseline = os.environ.get("TASKINFO_BASELINE")
                    results["taskinfo_bytes"] = taskinfo_bytes.run(Path(baseline) if baseline else None,
                                                                   **settings["taskinfo"])
            except Exception:  # noqa: BLE001 - the other parts still run; the error is in the results
                log(f"{part} failed:\n{traceback.format_exc()}")
                results.setdefault("errors", {})[part] = traceback.format_exc()[-4000:]
            results.setdefault("durations_s", {})[part] = round(time.monotonic() - t, 1)
            _write(args.out, results, started)  # partial results survive an interrupted run
    finally:
        if args.keep_logs:
            log(f"logs kept under {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    _write(args.out, results, started)
    log(f"wrote {args.out} and {args.out.parent / 'RESULTS.md'} in {time.monotonic() - started:.0f}s")
    return 0


def _write(out: Path, results: dict[str, Any], started: float) -> None:
    results["total_s"] = round(time.monotonic() - started, 1)
    results["environment"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    out.parent.mkdir(parents=True, exist_ok=True)
    md, verdicts = render(results)
    results["verdicts"] = verdicts
    out.write_text(json.dumps(results, indent=1, default=str) + "\n")
    (out.parent / "RESULTS.md").write_text(md)


if __name__ == "__main__":
    sys.exit(main())
