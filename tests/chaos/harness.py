"""Seeded chaos: real jobs on a separate ``tfmesos local-master``, the scheduler its own process,
and kill -9 of a parameter server, a worker, the chief, an executor or the scheduler at random
points of training. Every run must end as its policy says (here: OnFailure everywhere, so
SUCCEEDED with the expected accuracy), leave no process behind, and launch no task id twice.

    python -m tests.chaos.harness --seeds 20 --summary chaos-summary.json
"""
from __future__ import annotations

import argparse
import json
import random
import re
import signal
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tests.e2e.harness import ROOT, LocalMaster, accuracy, find_task_process, run_scheduler, wait_gone, write_options

EXAMPLES = {
    "pss": (ROOT / "examples" / "pss_digits" / "options.json", ("ps", "worker", "chief", "executor", "scheduler")),
    "mwms": (ROOT / "examples" / "mwms_digits" / "options.json", ("worker", "executor", "scheduler")),
}
STEPS = 1200  # where plan() puts faults: at steps 100 to STEPS - 300
MARGIN = 300  # steps a run trains past its last fault: the least plan() ever gave (a fault at STEPS - 300)


@dataclass
class Fault:
    target: str  # ps | worker | chief | executor | scheduler
    at_step: int
    index: int = 0
    done: bool = False


def train_steps(faults: list[Fault]) -> int:
    """The steps a run trains: MARGIN past its last fault, so that each fault lands mid-training
    as when every run trained STEPS, without training on long after the last recovery."""
    return min(STEPS, max(f.at_step for f in faults) + MARGIN)


@dataclass
class Outcome:
    seed: int
    example: str
    faults: list[Fault]
    ok: bool = False
    exit_code: int | None = None
    accuracy: float | None = None
    seconds: float = 0.0
    launches: int = 0
    problems: list[str] = field(default_factory=list)


def plan(seed: int) -> tuple[str, list[Fault]]:
    rng = random.Random(seed)
    example = "mwms" if rng.random() < 0.25 else "pss"
    targets = EXAMPLES[example][1]
    steps = sorted(rng.sample(range(100, STEPS - 200, 100), rng.choice((1, 1, 2))))
    faults = []
    for step in steps:
        target = rng.choice(targets)
        index = rng.randrange(2) if target in ("worker", "executor") else 0
        faults.append(Fault(target, step, index))
    return example, faults


def _role_for(example: str, fault: Fault) -> tuple[str, int]:
    if fault.target == "executor":
        return ("worker", fault.index)
    return (fault.target, fault.index)


def _wait_for_process(service: str, role: str, index: int, executor: bool, scheduler, timeout: float = 60.0):
    """The task's process; after an earlier fault it may still be on its way back (backoff, relaunch)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and scheduler.proc.poll() is None:
        proc = find_task_process(service, role, index, executor=executor)
        if proc is not None:
            return proc
        time.sleep(0.2)  # polling for a process to appear, with a deadline
    return None


def run_seed(seed: int, workdir: Path, timeout: float = 420.0) -> Outcome:
    example, faults = plan(seed)
    base, _ = EXAMPLES[example]
    service = f"chaos-{seed}"
    opts = write_options(
        workdir / f"{service}.json", base,
        service={"name": service},
        job={"env": [f"TRAIN_STEPS={train_steps(faults)}", "CHECKPOINT_EVERY=100"]},
        roles={r: {"restart_policy": "OnFailure", "max_restarts": 4} for r in json.loads(base.read_text())["roles"]},
        policies={"backoff_seconds": 0.5, "active_deadline_seconds": timeout},
    )
    out = Outcome(seed, example, faults)
    master = LocalMaster(workdir / f"master-{seed}")
    args = ["--master", master.address, "--state-dir", str(workdir / "state")]
    start = time.monotonic()
    schedulers = [run_scheduler(opts, *args)]
    progress = r"(chief:0|worker:0) \| step (\d+) "
    try:
        for fault in faults:
            try:
                schedulers[-1].wait_for(progress.replace(r"(\d+)", str(fault.at_step)), timeout)
            except AssertionError:
                if schedulers[-1].proc.poll() is not None:
                    break  # the job ended before this fault's step
                raise
            if fault.target == "scheduler":
                schedulers[-1].kill(signal.SIGKILL)
                schedulers[-1].wait(30)
                schedulers.append(run_scheduler(opts, *args))
            else:
                role, index = _role_for(example, fault)
                proc = _wait_for_process(service, role, index, fault.target == "executor", schedulers[-1])
                if proc is None:
                    continue  # the task was between attempts (an earlier fault) until the job ended
                proc.send_signal(signal.SIGKILL)
            fault.done = True
        last = schedulers[-1]
        out.exit_code = last.wait(timeout)
        text = "\n".join(s.output for s in schedulers)
        out.seconds = time.monotonic() - start
        launched = re.findall(r"launch \S+ as (\S+)", text)
        out.launches = len(launched)
        if len(launched) != len(set(launched)):
            out.problems.append(f"a task id was launched twice: {launched}")
        state = master.state()
        ids = [t["id"] for f in state.get("frameworks", []) + state.get("completed_frameworks", [])
               for t in f.get("tasks", []) + f.get("completed_tasks", [])]
        if len(ids) != len(set(ids)):
            out.problems.append("the master saw a task id twice")
        if out.exit_code != 0:
            out.problems.append(f"scheduler exited {out.exit_code}: {last.output[-1500:]}")
        else:
            out.accuracy = accuracy(text)
            if out.accuracy < 0.9:
                out.problems.append(f"accuracy {out.accuracy}")
    except Exception as exc:  # noqa: BLE001 - a chaos run reports, it does not stop the series
        out.problems.append(f"{type(exc).__name__}: {exc}"[:2000])
    finally:
        for s in schedulers:
            s.killpg(signal.SIGKILL)
        master.stop()
        left = wait_gone(service, timeout=30)
        if left:
            out.problems.append(f"processes left behind: {[p.pid for p in left]}")
    out.ok = not out.problems
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--summary", default="chaos-summary.json")
    args = parser.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory(prefix="tfmesos-chaos-") as tmp:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            r = run_seed(seed, Path(tmp))
            results.append(r)
            faults = ", ".join(f"{f.target}@{f.at_step}{'' if f.done else ' (not reached)'}" for f in r.faults)
            print(f"seed {seed:3d} {r.example:4s} [{faults}] -> {'ok' if r.ok else 'FAIL'} "
                  f"exit {r.exit_code} acc {r.accuracy} {r.seconds:.0f}s launches {r.launches}"
                  + ("" if r.ok else f"\n    {r.problems}"), flush=True)
    summary = {
        "seeds": args.seeds, "passed": sum(r.ok for r in results), "failed": sum(not r.ok for r in results),
        "faults_injected": sum(f.done for r in results for f in r.faults),
        "by_target": {t: sum(1 for r in results for f in r.faults if f.done and f.target == t)
                      for t in ("ps", "worker", "chief", "executor", "scheduler")},
        "runs": [asdict(r) for r in results],
    }
    Path(args.summary).write_text(json.dumps(summary, indent=1))
    print(f"{summary['passed']} passed, {summary['failed']} failed")
    return 0 if summary["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
