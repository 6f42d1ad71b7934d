"""Stretch: a restarted local-master (same --work-dir) re-adopts running executors."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from tests.e2e.harness import free_port
from tests.localmesos.sandbox_procs import EXECUTORS, assert_no_processes, processes_under
from tests.localmesos.scheduler_client import RawScheduler, framework_info, http_call, launch, scalar, wait_until

from pymesos import decode_data, encode_data


class Cli:
    def __init__(self, port: int, work_dir, *extra: str) -> None:  # type: ignore[no-untyped-def]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "localmesos", "--port", str(port), "--agents", "1",
             "--work-dir", str(work_dir), *extra],
            stdout=subprocess.PIPE, text=True, start_new_session=True)
        line = self.process.stdout.readline()  # type: ignore[union-attr]
        assert re.fullmatch(rf"tfmesos local-master listening on 127\.0\.0\.1:{port}\n", line), line

    def kill(self) -> None:
        """A crash: SIGKILL the master only; containers live in their own sessions."""
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            assert self.process.wait(30) == 0


@pytest.fixture
def clis(tmp_path):
    started: list[Cli] = []
    yield started
    for cli in started:
        if cli.process.poll() is None:
            os.killpg(cli.process.pid, signal.SIGKILL)
            cli.process.wait(10)
    assert_no_processes(tmp_path / "work")


def wait_message(scheduler: RawScheduler, agent_id: dict, text: str, timeout: float = 40.0) -> str:
    """Send a framework message until the (reconnecting) executor answers it."""
    assert scheduler.stream is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        scheduler.framework_call("MESSAGE", {"agent_id": agent_id, "executor_id": {"value": "echo-executor"},
                                             "data": encode_data(text.encode())})
        try:
            event = scheduler.stream.wait_for(lambda e: e["type"] == "MESSAGE", timeout=1.0)
        except TimeoutError:
            continue
        return decode_data(event["message"]["data"]).decode()
    raise AssertionError("the executor never answered")


def test_restart_readopts_checkpointed_executors(tmp_path, clis):
    port = free_port()
    work_dir = tmp_path / "work"
    clis.append(Cli(port, work_dir))
    address = f"127.0.0.1:{port}"
    scheduler = RawScheduler(address)
    scheduler.subscribe(framework_info("recoverable"))  # checkpoint: true
    offer = scheduler.next_offers()[0]
    task = {"name": "t", "task_id": {"value": "t"}, "agent_id": offer["agent_id"],
            "resources": [scalar("cpus", 0.5), scalar("mem", 64)],
            "data": encode_data(json.dumps({"finish_on": "finish"}).encode()),
            "executor": {"executor_id": {"value": "echo-executor"},
                         "command": {"value": f"{sys.executable} {EXECUTORS / 'pymesos_executor.py'} --recovering"},
                         "resources": [scalar("cpus", 0.1), scalar("mem", 32)]}}
    launch(scheduler, offer, [task])
    assert scheduler.next_update()["state"] == "TASK_RUNNING"
    agents_before = {s["id"]: s["port"] for s in http_call(address, "GET", "/state").body["slaves"]}
    framework_id = scheduler.framework_id

    clis[0].kill()
    assert scheduler.stream is not None and scheduler.stream.next(timeout=10) is None
    scheduler.close()
    assert processes_under(work_dir), "the executor survives the master"

    clis.append(Cli(port, work_dir))
    state = http_call(address, "GET", "/state").body
    assert {s["id"]: s["port"] for s in state["slaves"]} == agents_before
    (framework,) = state["frameworks"]
    assert (framework["id"], framework["recovered"], framework["connected"]) == (framework_id, True, False)
    assert [(t["id"], t["state"]) for t in framework["tasks"]] == [("t", "TASK_RUNNING")]

    again = RawScheduler(address)
    again.subscribe(framework_info("recoverable"), framework_id=framework_id)
    assert again.framework_call("RECONCILE", {"tasks": []}).status == 202
    status = again.next_update(ack=False)
    assert (status["task_id"]["value"], status["state"]) == ("t", "TASK_RUNNING")
    assert wait_message(again, offer["agent_id"], "ping") == "pong:ping"
    assert wait_message(again, offer["agent_id"], "finish") == "pong:finish"
    finished = again.next_update(task_id="t")
    assert (finished["state"], finished["message"]) == ("TASK_FINISHED", "finished on finish")
    assert again.teardown().status == 202
    again.close()
    assert_no_processes(work_dir)
    clis[1].stop()


def test_restart_kills_containers_it_cannot_recover(tmp_path, clis):
    port = free_port()
    work_dir = tmp_path / "work"
    clis.append(Cli(port, work_dir))
    scheduler = RawScheduler(f"127.0.0.1:{port}")
    scheduler.subscribe(framework_info("command-task"))
    offer = scheduler.next_offers()[0]
    task = {"name": "s", "task_id": {"value": "s"}, "agent_id": offer["agent_id"],
            "resources": [scalar("cpus", 0.1), scalar("mem", 32)], "command": {"value": "sleep 60"}}
    launch(scheduler, offer, [task])
    assert scheduler.next_update()["state"] == "TASK_STARTING"
    clis[0].kill()
    scheduler.close()
    assert processes_under(work_dir)
    clis.append(Cli(port, work_dir))
    wait_until(lambda: not processes_under(work_dir), timeout=10, message="orphaned command task killed")
    assert http_call(f"127.0.0.1:{port}", "GET", "/state").body["frameworks"] == []
    clis[1].stop()


def test_dynamic_reservations_survive_a_restart_unless_the_agent_changed(tmp_path, clis):
    """A Mesos agent checkpoints the resources dynamic reservations made; so does the embedded one.
    An agent started with other resources starts afresh (Mesos would refuse its re-registration)."""
    port, work_dir = free_port(), tmp_path / "work"
    address = f"127.0.0.1:{port}"
    clis.append(Cli(port, work_dir))
    agent_id = http_call(address, "GET", "/state").body["slaves"][0]["id"]
    reserved = [{"name": "cpus", "type": "SCALAR", "scalar": {"value": 1.5},
                 "reservations": [{"type": "DYNAMIC", "role": "team-b", "principal": "ops"}]}]
    reply = http_call(address, "POST", "/api/v1", {"type": "RESERVE_RESOURCES", "reserve_resources": {
        "agent_id": {"value": agent_id}, "resources": reserved}}, {"Content-Type": "application/json"})
    assert reply.status == 202, reply

    def team_b_cpus() -> float:
        slave = http_call(address, "GET", "/state").body["slaves"][0]
        return slave["reserved_resources"].get("team-b", {}).get("cpus", 0.0)

    clis[-1].stop()
    clis.append(Cli(port, work_dir))
    assert http_call(address, "GET", "/state").body["slaves"][0]["id"] == agent_id
    assert team_b_cpus() == 1.5, "the reservation is still there after the restart"
    clis[-1].stop()
    clis.append(Cli(port, work_dir, "--agent-cpus", "8"))
    assert team_b_cpus() == 0.0, "an agent configured otherwise starts from its new resources"

