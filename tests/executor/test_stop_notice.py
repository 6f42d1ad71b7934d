"""The executor's side of the planned-stop contract (docs/developers/architecture.md, "Planned
stop: the notice"), with a real task process: on a KILL it says TASK_KILLING, writes the notice
(the scheduler's reason when a StopNotice came first, else a drain's) with the SIGKILL deadline,
then sends SIGTERM; a second KILL sends SIGTERM again."""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.harness import eventually
from tfmesos.executor.executor import TaskProcess, TFExecutor
from tfmesos.mesos.messages import StopNotice, encode

# Counts its SIGTERMs, writes down the notice it finds at each, and leaves at the second (as a
# server told to serve on does).
_TASK = """
import os, signal, sys, time
count = [0]
def on_term(signum, frame):
    count[0] += 1
    with open("seen", "a") as out:
        out.write(open(os.environ["TFMESOS_NOTICE_FILE"]).read())
    if count[0] == 2:
        sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
open("ready", "w").close()
while True:
    time.sleep(0.05)
"""


class Driver:
    """The executor driver's calls the executor makes, recorded (the Mesos side of the edge)."""

    def __init__(self) -> None:
        self.updates: list[dict] = []

    def sendStatusUpdate(self, status: dict) -> None:  # noqa: N802
        self.updates.append(status)


@pytest.fixture
def running(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("MESOS_SANDBOX", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    ex, driver = TFExecutor(), Driver()
    ex.registered(driver, {}, {"capabilities": [{"type": "TASK_KILLING_STATE"}]}, {"hostname": "h1"})
    ex.task_id = "t.worker.1.2"
    env = {**os.environ, "TFMESOS_NOTICE_FILE": str(tmp_path / "notice.json")}
    ex.process = TaskProcess([sys.executable, "-c", _TASK], env, str(tmp_path), None)
    eventually(lambda: (tmp_path / "ready").exists(), 30, "the task to start")
    yield ex, driver, tmp_path
    ex.process.signal_group(9)
    ex.process.wait()


def _seen(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_kill_is_told_then_sigterm_and_a_second_kill_ends_a_server(running) -> None:
    ex, driver, sandbox = running
    ex.killTask(driver, {"value": ex.task_id}, {"grace_period": {"nanoseconds": 20_000_000_000}})
    assert [u["state"] for u in driver.updates] == ["TASK_KILLING"]
    seen = eventually(lambda: _seen(sandbox / "seen"), 10, "the task's SIGTERM")
    assert seen[0]["kind"] == "drain" and seen[0]["reason"] == "agent h1 draining"  # no StopNotice: the agent's KILL
    assert 15 < seen[0]["deadline"] - time.time() <= 20
    assert ex.process.proc.poll() is None, "one SIGTERM: it serves on"
    ex.killTask(driver, {"value": ex.task_id})
    assert ex.process.wait() == 0 and len(_seen(sandbox / "seen")) == 2
    assert [u["state"] for u in driver.updates] == ["TASK_KILLING"], "said once"


def test_the_schedulers_notice_gives_the_reason(running) -> None:
    ex, driver, sandbox = running
    ex.frameworkMessage(driver, encode(StopNotice(ex.task_id, "update to 4 workers", "update")))
    told = json.loads((sandbox / "notice.json").read_text())
    assert (told["reason"], told["kind"], told["deadline"]) == ("update to 4 workers", "update", None)
    ex.killTask(driver, {"value": ex.task_id}, {"grace_period": {"nanoseconds": 5_000_000_000}})
    seen = eventually(lambda: _seen(sandbox / "seen"), 10, "the task's SIGTERM")
    assert seen[0]["reason"] == "update to 4 workers" and seen[0]["deadline"] is not None


def test_a_plain_stop_of_the_schedulers_writes_no_notice(tmp_path: Path, monkeypatch) -> None:
    """A KILL of the scheduler's that is no planned stop (a failure's whole-job restart, the job
    stopped) is said first with kind "": SIGTERM alone, as before the contract (a server stops at once)."""
    monkeypatch.setenv("MESOS_SANDBOX", str(tmp_path))
    ex, driver = TFExecutor(), Driver()
    ex.registered(driver, {}, {"capabilities": []}, {"hostname": "h1"})
    ex.task_id = "t.ps.0.1"
    ex.process = TaskProcess(["sleep", "60"], dict(os.environ), str(tmp_path), None)
    ex.frameworkMessage(driver, encode(StopNotice(ex.task_id, "the job stops", "")))
    ex.killTask(driver, {"value": ex.task_id})
    assert ex.process.wait() == -15 and not (tmp_path / "notice.json").exists()
    assert driver.updates == [], "no TASK_KILLING for a framework without TASK_KILLING_STATE"
