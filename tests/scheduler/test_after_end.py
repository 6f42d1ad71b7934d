"""tfmesos/scheduler/after_end.py: where an ended job's logs are, found through what the scheduler
shell makes public (its agents' addresses) and the master, never through its private parts."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

import dataclasses

from tfmesos.core.spec import TaskKey
from tfmesos.core.tensorflow.profile import TENSORFLOW
from tfmesos.scheduler import after_end


def test_log_locations_asks_the_master_once_about_an_agent_no_offer_named(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, str]] = []

    def from_master(master: str, agent_id: str, timeout: float = 10.0) -> str | None:
        asked.append((master, agent_id))
        return "10.0.0.7:5051"

    monkeypatch.setattr(after_end, "agent_address_from_master", from_master)
    monkeypatch.setattr(after_end, "sandbox_directories", lambda where, framework_id, seconds: {
        task_id: f"/sandbox/{task_id}" for task_id in where})
    monkeypatch.setattr(after_end, "read_tail", lambda files, path, size: "")
    # Only what the shell offers in public: no _agent_address to fall back on.
    sched = SimpleNamespace(
        job=SimpleNamespace(tasks={TaskKey("chief", 0): SimpleNamespace(agent_id="a-old")},
                            spec=SimpleNamespace(profile=TENSORFLOW)),
        attempt_agents={}, agent_addresses={"a-new": "10.0.0.8:5051"}, framework_id="f-1")
    task_ids = {"job.chief.0.1": ["chief", 0], "job.chief.0.2": ["chief", 0], "job.ps.0.3": ["ps", 0]}
    sched.attempt_agents = {"job.chief.0.1": "a-old", "job.chief.0.2": "a-old", "job.ps.0.3": "a-new"}

    located = after_end.log_locations(sched, task_ids, "master:5050")  # type: ignore[arg-type]

    assert asked == [("master:5050", "a-old")], "asked once, about the agent no offer named"
    assert [a["agent"] for a in located["chief:0"]] == ["10.0.0.7:5051", "10.0.0.7:5051"]
    assert located["ps:0"][0] == {"task_id": "job.ps.0.3", "agent": "10.0.0.8:5051", "directory": "/sandbox/job.ps.0.3",
                                  "tail": {"stdout": "", "stderr": ""}}
    assert after_end.log_locations(sched, {"job.chief.0.1": ["chief", 0]}, None)["chief:0"][0]["agent"] is None, \
        "no master to ask: the location stays unknown"


def test_the_tails_kept_are_of_the_first_tasks_in_the_profiles_role_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(after_end, "sandbox_directories", lambda where, framework_id, seconds: {
        task_id: f"/sandbox/{task_id}" for task_id in where})
    monkeypatch.setattr(after_end, "read_tail", lambda files, path, size: "tail")
    monkeypatch.setattr(after_end, "TAIL_TASKS", 2)
    task_ids = {"job.worker.0.1": ["worker", 0], "job.chief.0.2": ["chief", 0], "job.ps.0.3": ["ps", 0],
                "job.tensorboard.0.4": ["tensorboard", 0]}
    tailed = {}
    for order in (("chief", "ps", "worker"), ("worker", "ps", "chief")):
        sched = SimpleNamespace(
            job=SimpleNamespace(tasks={}, spec=SimpleNamespace(profile=dataclasses.replace(TENSORFLOW, role_order=order))),
            attempt_agents={t: "a-1" for t in task_ids}, agent_addresses={"a-1": "10.0.0.8:5051"}, framework_id="f-1")
        located = after_end.log_locations(sched, task_ids, "master:5050")  # type: ignore[arg-type]
        tailed[order] = sorted(task for task, attempts in located.items() if "tail" in attempts[-1])
    assert tailed == {("chief", "ps", "worker"): ["chief:0", "ps:0"], ("worker", "ps", "chief"): ["ps:0", "worker:0"]}
