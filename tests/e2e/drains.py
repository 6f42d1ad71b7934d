"""An agent drained in the middle of training, end to end, against any master (``address``,
``state()``): the embedded one (test_drains.py) and a real Apache Mesos (test_drains_real_mesos.py).

Each task runs on an agent of its own (an agent fits one task), with one agent spare, so that the
drained agent's tasks have somewhere else to go. The training scripts are the planned-stop tests'
(tests/e2e/planned/): each appends the steps it ran to STEP_LOG, and the test counts them:
- a step ran **twice** when it appears more than once in a task's log, over every attempt;
- a step is **missing** when it never appears in range(steps the job trains).
MultiWorkerMirroredStrategy: each worker logs the steps it ran; ParameterServerStrategy: the chief
logs the steps it scheduled, once they ran. Every case runs with ``max_restarts: 0``: a drain
counted as a failure fails the job.

STEPS is a margin, so that the drain lands mid-training however loaded the machine: the attempt
that resumes after the drain trains RESUMED more steps (to the end of that epoch or checkpoint) and
the job ends there (RESUMED_STEPS, tests/e2e/planned/steplog.py), so the steps counted are those of
range(the step the job says it trained to).
"""
from __future__ import annotations

import json
import re
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.harness import eventually, find_task_process, run_scheduler, stop_scheduler, write_options
from tests.e2e.planned_job import SCRIPTS, missing, steps_by_task, twice

STEPS = 1500  # 30 epochs of 50 steps: the drain comes after DRAIN_AFTER, well before the end
RESUMED = 100  # steps the job trains once resumed after the drain, to the next epoch's end (at most STEPS)
DRAIN_AFTER = 125  # mid-epoch and between checkpoints: a kill -9 there loses what a drain saves
AGENT_CPUS, AGENT_MEM = 1.0, 1500.0  # one task's room (0.5 cpus, 700 MB, and its executor), not two
TASK = {"cpus": 0.5, "mem": 700, "max_restarts": 0}
MAX_GRACE_S = 60


@dataclass(frozen=True)
class Mode:
    name: str
    script: str
    env: tuple[str, ...]
    roles: dict[str, Any]
    logged_by: tuple[tuple[str, int], ...]  # the tasks whose steps are counted
    success: str = "chief"

    @property
    def tasks(self) -> int:
        return sum(r.get("count", 1) for r in self.roles.values())

    @property
    def every(self) -> int:
        """Where a resumed attempt may end: an epoch's end (STEPS_PER_EPOCH) or a checkpoint's."""
        env = dict(e.split("=", 1) for e in self.env)
        return int(env.get("STEPS_PER_EPOCH") or env["CHECKPOINT_EVERY"])


RESUMED_ENV = f"RESUMED_STEPS={RESUMED}"  # the gate (tests/e2e/planned/steplog.py)
MWMS_HANDLER = Mode("mwms-handler", "mwms_handler.py", (f"TRAIN_STEPS={STEPS}", "STEPS_PER_EPOCH=50", RESUMED_ENV),
                    {"worker": {"count": 2}}, (("worker", 0), ("worker", 1)), "all_workers")
KERAS_MWMS = Mode("keras-mwms", "keras_mwms.py", ("EPOCHS=30", "STEPS_PER_EPOCH=50", RESUMED_ENV),
                  {"worker": {"count": 2}}, (("worker", 0), ("worker", 1)), "all_workers")
_PSS_ROLES = {"chief": {"count": 1}, "ps": {"count": 1}, "worker": {"count": 2, "server": True}}
KERAS_PSS = Mode("keras-pss", "keras_pss.py", ("EPOCHS=30", "STEPS_PER_EPOCH=50", "STEPS_PER_EXECUTION=5", RESUMED_ENV),
                 _PSS_ROLES, (("chief", 0),))
PSS_LOOP = Mode("pss-loop", "pss_loop.py", (f"TRAIN_STEPS={STEPS}", "CHECKPOINT_EVERY=100", RESUMED_ENV), _PSS_ROLES,
                (("chief", 0),))


def agents_for(mode: Mode) -> int:
    return mode.tasks + 1  # one spare: the drained agent's tasks move there


def operator(address: str, call: dict[str, Any]) -> None:
    request = urllib.request.Request(f"http://{address}/api/v1", data=json.dumps(call).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as resp:
        assert resp.status == 200, resp.status


def tasks_of(state: dict, name: str) -> list[dict]:
    return [t for f in state.get("frameworks", []) + state.get("completed_frameworks", []) if f["name"] == name
            for t in f.get("tasks", []) + f.get("completed_tasks", [])]


def agent_of(state: dict, name: str, role: str, index: int) -> str:
    return next(t["slave_id"] for t in tasks_of(state, name)
                if t["id"].startswith(f"{name}.{role}.{index}.") and t["state"] == "TASK_RUNNING")


@dataclass
class Drained:
    output: str
    steps: dict
    before: set[str]  # the task ids the master knew when the drain was asked
    on_drained: set[str]  # every task id the master ever had on the drained agent
    notice_to_resumed_s: float  # the drain (or kill) asked to the first step trained again
    succeeded: bool

    def steps_lost(self) -> int:
        """Steps trained twice or never, in the task that lost most (MWMS: every worker runs each step),
        of the steps the job says it trained (all STEPS where it never said: a failed kill -9 case)."""
        total = trained_to(self.output) or STEPS
        return max(len(twice(steps)) + len(missing(steps, total)) for steps in self.steps.values())


def trained_to(output: str) -> int | None:
    """The step the job trained to, as its last attempt says at its end ("trained N steps": the
    chief's, worker 0's): STEPS, or about RESUMED past the step it resumed at after a stop."""
    said = re.findall(r"\| trained (\d+) steps", output)
    return int(said[-1]) if said else None


def gate_end(output: str, every: int) -> int:
    """Where the gate ends the job (steplog.resumed_end): RESUMED past the step its last attempt
    started at ("starting at step N"), rounded up to ``every``; STEPS for an attempt from step 0."""
    started = re.findall(r"\| starting at step (\d+)", output)
    start = int(started[-1]) if started else 0
    return STEPS if start <= 0 else min(STEPS, -(-(start + RESUMED) // every) * every)


def start_logged(tmp_path: Path, cluster: Any, mode: Mode, name: str, roles: dict[str, Any], log: Path) -> Any:
    """The job of ``mode`` started on ``cluster``, each step its tasks train appended to ``log``."""
    opts = write_options(tmp_path / "o.json", service={"name": name},
                         job={"command": f"{sys.executable} {SCRIPTS / mode.script}",
                              "checkpoint_dir": str(tmp_path / "ckpt"),
                              "env": [*mode.env, f"STEP_LOG={log}"]},
                         roles=roles, policies={"success": mode.success})
    return run_scheduler(opts, "--master", cluster.address, "--state-dir", str(tmp_path / "state"))


def wait_trained(run: Any, mode: Mode, log: Path) -> None:
    """Until the last task ``mode`` logs by has trained DRAIN_AFTER steps (mid-epoch, between checkpoints);
    a job that ended before (a task that could not start) fails here at once, with its output."""
    counted = mode.logged_by[-1]
    eventually(lambda: len(steps_by_task(log)[counted]) >= DRAIN_AFTER or run.proc.poll() is not None, 300,
               f"{counted} to log {DRAIN_AFTER} steps\n" + run.output[-3000:])
    assert run.proc.poll() is None, f"the job ended before {counted} logged {DRAIN_AFTER} steps:\n{run.output[-5000:]}"


def run_drain(tmp_path: Path, cluster: Any, mode: Mode, leaving: tuple[str, int], kill9: bool = False) -> Drained:
    """The job of ``mode`` run until ``logged_by[-1]`` logged DRAIN_AFTER steps, then the agent of
    ``leaving`` drained (max_grace_period 60 s); the job run to its end. With ``kill9``, the task's
    process is killed -9 instead (a failure: one restart allowed), for the benchmark's comparison."""
    name = f"{'kill' if kill9 else 'drain'}-{mode.name}-{leaving[0]}{leaving[1]}"
    log = tmp_path / "steps.log"
    failure = {"max_restarts": 1, "restart_policy": "OnFailure"} if kill9 else {}
    roles = {role: {**TASK, **opts, **failure} for role, opts in mode.roles.items()}
    run = start_logged(tmp_path, cluster, mode, name, roles, log)
    try:
        wait_trained(run, mode, log)
        state = cluster.state()
        agent = agent_of(state, name, *leaving)
        before = {t["id"] for t in tasks_of(state, name)}
        drained_at = time.monotonic()
        if kill9:
            proc = find_task_process(name, *leaving)
            assert proc is not None, f"no process for {leaving} of {name}"
            proc.kill()
        else:
            operator(cluster.address, {"type": "DRAIN_AGENT", "drain_agent": {
                "agent_id": {"value": agent}, "max_grace_period": {"seconds": MAX_GRACE_S}}})
        resumed = _resumed(cluster, name, before, log, mode.logged_by, run) - drained_at
        code = run.wait(400)
        assert kill9 or code == 0, run.output[-5000:]
        on_drained = {t["id"] for t in tasks_of(cluster.state(), name) if t["slave_id"] == agent}
    finally:
        stop_scheduler(run)
        (tmp_path / "console.txt").write_text(run.output)  # for a look after a slow or failed case
    steps = steps_by_task(log)
    return Drained(run.output, {key: steps[key] for key in mode.logged_by}, before, on_drained, resumed, code == 0)


def _resumed(cluster: Any, name: str, before: set[str], log: Path, loggers: tuple[tuple[str, int], ...],
             run: Any) -> float:
    """When training resumed (time.monotonic()): once every attempt that logged steps before the
    stop has ended, the first step logged again (by a new attempt: the old ones cannot log)."""
    old = {t for t in before if any(t.startswith(f"{name}.{role}.{index}.") for role, index in loggers)}

    def ended() -> bool:
        states = {t["id"]: t["state"] for t in tasks_of(cluster.state(), name)}
        return all(states.get(t) not in ("TASK_STAGING", "TASK_STARTING", "TASK_RUNNING", "TASK_KILLING") for t in old)

    over = lambda: run.proc.poll() is not None  # noqa: E731 - the job ended (failed): nothing resumes
    eventually(lambda: ended() or over(), 300, "the attempts that stopped to end\n" + run.output[-3000:])
    lines = len(log.read_text().splitlines())
    eventually(lambda: len(log.read_text().splitlines()) > lines or over(), 300,
               "training to resume after the stop\n" + run.output[-3000:])
    return time.monotonic() if not over() else float("nan")


def assert_lost_nothing(drained: Drained, mode: Mode, leaving: tuple[str, int]) -> None:
    """The bars of issue 38: succeeded (the caller checked the exit), 0 steps twice, 0 missing,
    nothing on the drained agent afterwards, the drain said."""
    out = drained.output
    assert re.search(r"job drain-\S+ SUCCEEDED", out), out[-4000:]
    total = trained_to(out)  # where the gate ended the job, neither earlier nor later
    assert total is not None and DRAIN_AFTER < total == gate_end(out, mode.every), (total, out[-4000:])
    for key, steps in drained.steps.items():
        assert (twice(steps), missing(steps, total)) == ([], []), (key, twice(steps)[:10], missing(steps, total)[:10])
    assert drained.on_drained <= drained.before, f"placed on the drained agent: {drained.on_drained - drained.before}"
    role, index = leaving
    assert re.search(rf"draining: {role}:{index} .*moving.*\(planned stop #1, not counted against max_restarts\)",
                     out), out[-4000:]
    assert "drain" in out
    print(f"{mode.name}, {role}:{index} drained: resumed {drained.notice_to_resumed_s:.1f} s after the drain")
