"""An agent that stops answering (the twin of SIGSTOP to a mesos-agent) and comes back, as a real
Mesos 1.12 handles it (trace 12-agent-unreachable): unreachable after its missed pings, its tasks
TASK_LOST and FAILURE, offers elsewhere only; back, re-registered with its tasks, which it kept
running, and their frameworks told so; it kills nothing itself."""
from __future__ import annotations

import json
import time

import pytest

from tests.localmesos.scheduler_client import RawScheduler, command_task, framework_info, launch, wait_until
from tests.localmesos.sandbox_procs import processes_under
from tests.localmesos.traces import TRACE_DIR

from localmesos import LocalMaster, Tuning

PINGS = Tuning(stop_grace_period=1.0, agent_ping_timeout=0.2, max_agent_ping_timeouts=3)


def trace_events(name: str) -> list[dict]:
    lines = [json.loads(line) for line in (TRACE_DIR / name).read_text().splitlines()]
    return [line["event"] for line in lines if line["dir"] == "event"]


def _shape(status: dict) -> tuple:
    """What must match the real master: state, message, source, reason and which fields are there."""
    return status["state"], status.get("message"), status["source"], status.get("reason"), sorted(status)


@pytest.fixture
def running(make_master):
    master = make_master(tuning=PINGS)
    scheduler = RawScheduler(master.address)
    scheduler.subscribe(framework_info("agent-loss"))
    offer = scheduler.next_offers()[0]
    agent_id = offer["agent_id"]["value"]
    assert launch(scheduler, offer, [command_task("sleeper-1", agent_id, "sleep 600")], refuse_seconds=0).status == 202
    while scheduler.next_update(task_id="sleeper-1")["state"] != "TASK_RUNNING":
        pass
    # TASK_RUNNING comes once the task's `sh -c 'sleep 600'` is started, as Mesos' command executor
    # sends it: the shell may not have exec'd `sleep` yet (seen once in a make test run, under load).
    (process,) = wait_until(lambda: [p for p in processes_under(master.work_dir) if p.info["cmdline"] == ["sleep", "600"]],
                            message="the task's sleep 600 under the master's work dir")
    yield master, scheduler, agent_id, process
    scheduler.close()


@pytest.mark.serial("times three missed pings of 0.2 s against 0.6-1.5 s")
def test_a_stopped_agent_is_unreachable_after_its_missed_pings_and_its_tasks_are_lost(running):
    master, scheduler, agent_id, process = running
    real_lost, real_failure = trace_events("12-agent-unreachable.jsonl")[4:6]
    started = time.monotonic()
    master.pause_agent(0)
    lost = scheduler.next_update(task_id="sleeper-1", timeout=5)
    took = time.monotonic() - started
    assert 0.6 <= took < 1.5, "3 missed pings of 0.2 s (3 to 4 periods), not sooner, not much later"
    assert _shape(lost) == _shape(real_lost["update"]["status"])
    assert (lost["state"], lost["message"], lost["reason"]) == ("TASK_LOST", "health check timed out",
                                                                "REASON_AGENT_REMOVED")
    failure = scheduler.stream.wait_for(lambda e: e["type"] == "FAILURE", 5)
    assert failure == {"type": "FAILURE", "failure": {"agent_id": {"value": agent_id}}} and real_failure["type"] == "FAILURE"
    state = master.state()
    assert (state["unreachable_slaves"], state["slaves"], state["frameworks"][0]["tasks"]) == (1.0, [], [])
    assert process.is_running(), "a stopped agent's tasks run on (their processes are not its own)"
    scheduler.stream.expect_silence(0.5)  # no offers from an unreachable agent


def test_the_agent_back_re_registers_with_its_task_and_the_framework_hears_it_running(running):
    master, scheduler, agent_id, process = running
    real_back = trace_events("12-agent-unreachable.jsonl")[6]
    master.pause_agent(0)
    assert scheduler.next_update(task_id="sleeper-1", timeout=5)["state"] == "TASK_LOST"
    master.resume_agent(0)
    back = scheduler.next_update(task_id="sleeper-1", timeout=5)
    assert _shape(back) == _shape(real_back["update"]["status"])
    assert (back["state"], back["message"], back["reason"]) == ("TASK_RUNNING", "Unreachable agent re-reregistered",
                                                                "REASON_AGENT_REREGISTERED")
    assert back["container_status"]["executor_pid"] > 0
    offers = scheduler.next_offers()
    assert offers[0]["agent_id"]["value"] == agent_id, "offered again"
    state = master.state()
    assert state["unreachable_slaves"] == 0.0 and len(state["slaves"]) == 1
    assert [(t["id"], t["state"]) for t in state["frameworks"][0]["tasks"]] == [("sleeper-1", "TASK_RUNNING")]
    assert process.is_running(), "Mesos 1.12 kills nothing on its own: the framework must"
    reply = scheduler.framework_call("KILL", {"task_id": {"value": "sleeper-1"}, "agent_id": {"value": agent_id}})
    assert reply.status == 202
    assert scheduler.next_update(task_id="sleeper-1", timeout=10)["state"] == "TASK_KILLED"
    process.wait(10)


def test_what_a_stopped_agent_missed_it_does_when_it_continues(running):
    """A task that ends while its agent is stopped: nobody hears it until the agent continues; then
    its end follows the re-registration (which reports the task as the agent last knew it)."""
    master, scheduler, agent_id, process = running
    master.pause_agent(0)
    process.kill()
    assert scheduler.next_update(task_id="sleeper-1", timeout=5)["state"] == "TASK_LOST"
    scheduler.stream.expect_silence(0.5, types=("UPDATE",))
    master.resume_agent(0)
    back = scheduler.next_update(task_id="sleeper-1", timeout=5)
    assert (back["state"], back["reason"]) == ("TASK_RUNNING", "REASON_AGENT_REREGISTERED")
    end = scheduler.next_update(task_id="sleeper-1", timeout=5)
    assert (end["state"], end["source"]) == ("TASK_FAILED", "SOURCE_EXECUTOR")
    wait_until(lambda: not processes_under(master.work_dir), 10, message="the container to be gone")


def test_an_agent_that_answers_is_never_marked(make_master):
    master: LocalMaster = make_master(tuning=PINGS)
    time.sleep(1.0)  # five ping rounds
    state = master.state()
    assert state["unreachable_slaves"] == 0.0 and len(state["slaves"]) == 1
