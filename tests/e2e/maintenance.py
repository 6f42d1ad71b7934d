"""A maintenance window scheduled on the machine of worker:1 in the middle of training, end to end,
against any master (``address``, ``state()``): the embedded one (test_maintenance.py), and a real
Apache Mesos where one runs. The job and its counting are the drain cases' (tests/e2e/drains.py):
each task on an agent of its own, one agent spare, every worker's steps logged, max_restarts 0.

The window opens WINDOW_AHEAD_S after it is scheduled; the job's margin (300 s by default) is
longer, so the tasks there move at once, at a checkpoint: every worker saves at the agreed step
(MultiWorkerMirroredStrategy), and the job is placed again off that machine, whose offers now
carry the window. Then the inverse offer is accepted.
"""
from __future__ import annotations

import json
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.drains import MWMS_HANDLER, TASK, agent_of, start_logged, tasks_of, wait_trained
from tests.e2e.harness import eventually, stop_scheduler
from tests.e2e.planned_job import steps_by_task

WINDOW_AHEAD_S = 60
WINDOW_S = 3600


def schedule(address: str, hostname: str, start: float) -> None:
    """POST /maintenance/schedule: the machine (hostname and IP alike on loopback agents) from ``start``."""
    body = {"windows": [{"machine_ids": [{"hostname": hostname, "ip": hostname}], "unavailability": {
        "start": {"nanoseconds": int(start * 1e9)}, "duration": {"nanoseconds": int(WINDOW_S * 1e9)}}}]}
    request = urllib.request.Request(f"http://{address}/maintenance/schedule", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as resp:
        assert resp.status == 200, resp.status


def maintenance_status(address: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://{address}/maintenance/status", timeout=10) as resp:
        return json.load(resp)


@dataclass
class Window:
    output: str
    steps: dict
    before: set[str]  # the task ids the master knew when the window was scheduled
    on_machine: set[str]  # every task id the master ever had on that machine's agent
    opens_at: float  # unix seconds
    moved_at: float  # unix seconds: nothing of the job live there, training resumed elsewhere
    status: dict[str, Any]  # /maintenance/status at the end


def run_window(tmp_path: Path, cluster: Any, name: str = "maint-mwms") -> Window:
    mode = MWMS_HANDLER
    log = tmp_path / "steps.log"
    run = start_logged(tmp_path, cluster, mode, name, {role: {**TASK, **o} for role, o in mode.roles.items()}, log)
    try:
        wait_trained(run, mode, log)
        state = cluster.state()
        agent = agent_of(state, name, "worker", 1)
        hostname = next(s["hostname"] for s in state["slaves"] if s["id"] == agent)
        before = {t["id"] for t in tasks_of(state, name)}
        lines = len(log.read_text().splitlines())
        opens_at = time.time() + WINDOW_AHEAD_S
        schedule(cluster.address, hostname, opens_at)
        eventually(lambda: _moved(cluster, name, agent, before, log, lines), 300,
                   "the tasks to move off the machine and training to resume\n" + run.output[-3000:])
        moved_at = time.time()
        assert run.wait(400) == 0, run.output[-5000:]
        end = cluster.state()
        status = maintenance_status(cluster.address)
    finally:
        stop_scheduler(run)
    on_machine = {t["id"] for t in tasks_of(end, name) if t["slave_id"] == agent}
    steps = steps_by_task(log)
    return Window(run.output, {key: steps[key] for key in mode.logged_by}, before, on_machine, opens_at, moved_at,
                  status)


def _moved(cluster: Any, name: str, agent: str, before: set[str], log: Path, lines: int) -> bool:
    tasks = tasks_of(cluster.state(), name)
    there = [t for t in tasks if t["slave_id"] == agent and t["state"] in ("TASK_RUNNING", "TASK_KILLING",
                                                                           "TASK_STAGING", "TASK_STARTING")]
    new = [t for t in tasks if t["id"] not in before and t["state"] == "TASK_RUNNING"]
    return not there and len(new) == MWMS_HANDLER.tasks and len(log.read_text().splitlines()) > lines
