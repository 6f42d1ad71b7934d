"""Replays the planned-change scenarios 13-17, recorded from a real Mesos 1.12 by
tools/record_planned_change.py, against LocalMaster: agent drain (with and without
TASK_KILLING_STATE), deactivate/reactivate, the maintenance schedule with inverse offers, machine
down and up. Same calls, same answers, same events, compared through placeholder bindings
(tests/localmesos/traces.py). The two embedded agents each get their own loopback address, as the
recorded ones had (A 127.0.0.2, B 127.0.0.3: a machine each), and the same resources and ports."""
from __future__ import annotations

import json
import queue
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from localmesos import LocalMaster
from tests.localmesos.http.test_trace_conformance import assert_reply, first_call, replay, subscribe_like
from tests.localmesos.sandbox_procs import processes_under
from tests.localmesos.scheduler_client import RawScheduler, http_call, wait_until
from tests.localmesos.traces import Bindings, call_with_note, calls, events, load, update

REPO = Path(__file__).resolve().parents[3]
TERMINAL = {"TASK_FINISHED", "TASK_FAILED", "TASK_KILLED", "TASK_LOST", "TASK_ERROR", "TASK_DROPPED"}


def start(make_master: Any) -> tuple[LocalMaster, Bindings]:
    master = make_master(agents=2, machine_per_agent=True, agent_cpus=2.0, agent_mem=2048.0, agent_disk=10000.0,
                         first_port=31000, ports_per_agent=100)
    (a, a_endpoint), (b, b_endpoint) = master.agent_endpoints.items()
    assert (a_endpoint.split(":")[0], b_endpoint.split(":")[0]) == ("127.0.0.2", "127.0.0.3")
    bindings = Bindings(ports={5250: int(master.address.rsplit(":", 1)[1]), 5251: int(a_endpoint.rsplit(":", 1)[1]),
                               5252: int(b_endpoint.rsplit(":", 1)[1])})
    bindings.bind("<AGENT_ID_1>", a, "agent A")
    bindings.bind("<AGENT_ID_2>", b, "agent B")
    bindings.bind("<REPO>", str(REPO), "repository")
    bindings.bind("<PYTHON>", sys.executable, "python")
    return master, bindings


def trace_offer(trace: list[dict[str, Any]], agent: str, nth: int = 0) -> dict[str, Any]:
    return [o for e in events(trace, "OFFERS") for o in e["offers"]["offers"] if o["agent_id"]["value"] == agent][nth]


def received(scheduler: RawScheduler, kind: str, nth: int, where: Any = lambda e: True,
             timeout: float = 10.0) -> dict[str, Any]:
    """The ``nth`` event of ``kind`` (that ``where`` accepts) the stream brought, waiting for it.
    Counted over everything received, whatever other waits consumed meanwhile."""
    assert scheduler.stream is not None
    stream = scheduler.stream

    def found() -> dict[str, Any] | None:
        matching = [e for e in list(stream.received) if e["type"] == kind and where(e)]
        return matching[nth] if len(matching) > nth else None

    return wait_until(found, timeout, message=f"{kind} #{nth}")


def expect_offer(scheduler: RawScheduler, trace: list[dict[str, Any]], b: Bindings, agent: str, nth: int,
                 timeout: float = 10.0) -> None:
    """The ``nth`` offer from ``agent`` is the trace's ``nth`` from it."""
    agent_id = b.values[agent]
    event = received(scheduler, "OFFERS", nth,
                     lambda e: any(o["agent_id"]["value"] == agent_id for o in e["offers"]["offers"]), timeout)
    offer = dict(next(o for o in event["offers"]["offers"] if o["agent_id"]["value"] == agent_id))
    expected = dict(trace_offer(trace, agent, nth))
    if "executor_ids" in expected:  # Mesos lists them in hash order
        offer["executor_ids"] = sorted(offer["executor_ids"], key=lambda e: e["value"])
        expected["executor_ids"] = sorted(expected["executor_ids"], key=lambda e: e["value"])
    b.match(offer, expected, f"offer {nth} of {agent}")


def expect_event(scheduler: RawScheduler, trace: list[dict[str, Any]], b: Bindings, kind: str, nth: int,
                 timeout: float = 10.0) -> dict[str, Any]:
    event = received(scheduler, kind, nth, timeout=timeout)
    b.match(event, events(trace, kind)[nth], f"{kind}[{nth}]")
    return event


def assert_rescinds(scheduler: RawScheduler, trace: list[dict[str, Any]], b: Bindings, first: int, end: int) -> None:
    """RESCINDs ``first`` to ``end`` are the trace's, in any order (agents come in hash order there)."""
    ours = {received(scheduler, "RESCIND", i)["rescind"]["offer_id"]["value"] for i in range(first, end)}
    theirs = {b.values[e["rescind"]["offer_id"]["value"]] for e in events(trace, "RESCIND")[first:end]}
    assert ours == theirs


def from_agent(agent_id: str) -> Any:
    return lambda e: any(o["agent_id"]["value"] == agent_id for o in e["offers"]["offers"])


def assert_none_within(scheduler: RawScheduler, kind: str, seconds: float, where: Any = lambda e: True) -> None:
    """No new ``kind`` event for ``seconds`` (the absence itself is what is checked)."""
    assert scheduler.stream is not None
    stream = scheduler.stream
    before = sum(1 for e in list(stream.received) if e["type"] == kind and where(e))
    deadline = time.monotonic() + seconds
    while (remaining := deadline - time.monotonic()) > 0:
        try:
            stream.events.get(timeout=remaining)
        except queue.Empty:
            break
    after = [e for e in list(stream.received) if e["type"] == kind and where(e)]
    assert len(after) == before, f"unexpected {kind}: {after[before:]}"


def replay_note(scheduler: RawScheduler, trace: list[dict[str, Any]], b: Bindings, note: str) -> None:
    call, response = call_with_note(trace, note)
    assert_reply(replay(scheduler, call, b), response, b)


def updates_until(scheduler: RawScheduler, trace: list[dict[str, Any]], b: Bindings, wanted: set[tuple[str, str]],
                  timeout: float = 30.0) -> list[dict[str, Any]]:
    """Updates until each (task, state) in ``wanted`` came, each matched with the trace's;
    non-terminal ones are acknowledged, terminal ones returned unacknowledged."""
    held, deadline = [], time.monotonic() + timeout
    while wanted:
        status = scheduler.next_update(timeout=max(deadline - time.monotonic(), 0.01), ack=False)
        key = (status["task_id"]["value"], status["state"])
        b.match(status, update(trace, *key), f"UPDATE {key}")
        wanted.discard(key)
        if status["state"] in TERMINAL:
            held.append(status)
        else:
            scheduler.acknowledge(status)
    return held


def operator_reply(master: LocalMaster, trace: list[dict[str, Any]], b: Bindings, note: str) -> Any:
    """Replay the operator call of ``note`` and check the reply; GET_AGENTS' agents and /state's
    slaves (hash order in Mesos) are compared agent by agent."""
    call, response = call_with_note(trace, note)
    reply = http_call(master.address, call["method"], call["path"], b.fill(call["body"]), call["headers"] or None)
    assert reply.status == response["http_status"], (note, reply)
    body, expected = reply.body, response["body"]
    if isinstance(expected, dict) and "get_agents" in expected:
        ours, theirs = body["get_agents"]["agents"], expected["get_agents"]["agents"]
        assert len(ours) == len(theirs)
        for entry in theirs:
            agent_id = b.values[entry["agent_info"]["id"]["value"]]
            b.match(next(a for a in ours if a["agent_info"]["id"]["value"] == agent_id), entry, f"{note} agent")
        assert body["get_agents"]["recovered_agents"] == expected["get_agents"]["recovered_agents"] == []
    elif isinstance(expected, dict) and "slaves" in expected:
        for key in ("activated_slaves", "deactivated_slaves", "unreachable_slaves"):
            b.match(body[key], expected[key], f"{note} {key}")
        assert len(body["slaves"]) == len(expected["slaves"])
        for entry in expected["slaves"]:
            b.match(next(s for s in body["slaves"] if s["id"] == b.values[entry["id"]]), entry, f"{note} slave")
    elif isinstance(expected, (dict, list)):
        assert reply.headers.get("Content-Type") == response["headers"]["Content-Type"] == "application/json"
        b.match(body, expected, note)
    else:
        assert_reply(reply, response, b)
    return body


def sandbox_kills(master: LocalMaster) -> dict[str, Any]:
    kills = {}
    for log_file in master.work_dir.glob("agents/*/frameworks/*/executors/*/runs/*/recorder.log"):
        for line in log_file.read_text().splitlines():
            event = json.loads(line)["event"]
            if event["type"] == "KILL":
                kills[log_file.parts[-4]] = event
    return kills


def env_note(trace: list[dict[str, Any]], fragment: str) -> Any:
    return next(line["body"] for line in trace if line["dir"] == "env" and fragment in line["note"])


# -- 13, 14 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["13-drain-killing-state", "14-drain-no-killing-state"])
def test_drain_kills_every_task_caps_custom_executors_and_is_drained_once_acknowledged(make_master, name):
    master, b = start(make_master)
    trace = load(f"{name}.jsonl")
    killing_state = name.startswith("13")
    scheduler = subscribe_like(trace, master, b)
    expect_offer(scheduler, trace, b, "<AGENT_ID_1>", 0)
    expect_offer(scheduler, trace, b, "<AGENT_ID_2>", 0)
    accept, response = first_call(trace, "ACCEPT")
    assert_reply(replay(scheduler, accept, b), response, b)
    tasks = ("task-trap", "task-exec-30s", "task-exec-none")
    updates_until(scheduler, trace, b, {(t, "TASK_RUNNING") for t in tasks} | {("task-trap", "TASK_STARTING")})
    expect_offer(scheduler, trace, b, "<AGENT_ID_1>", 1)
    wait_until(lambda: _trap_set(master), 10, message="task-trap's shell in its loop")

    operator_reply(master, trace, b, "(r1)")
    drained = time.monotonic()
    operator_reply(master, trace, b, "(d1)")
    expect_event(scheduler, trace, b, "RESCIND", 0)
    wanted = {(t, "TASK_KILLED") for t in tasks} | {(t, "TASK_KILLING") for t in tasks[1:]}
    if killing_state:
        wanted.add(("task-trap", "TASK_KILLING"))
    held = updates_until(scheduler, trace, b, wanted)
    trap_ended = time.monotonic() - drained
    assert trap_ended >= 7.5, "the command executor keeps the task's own 8 s, not the 5 s cap (trace: 8.5 s)"
    if not killing_state:
        assert not any(e["type"] == "UPDATE" and e["update"]["status"]["state"] == "TASK_KILLING"
                       and e["update"]["status"]["task_id"]["value"] == "task-trap" for e in scheduler.stream.received)
    assert scheduler.stream is not None
    failures = [received(scheduler, "FAILURE", i) for i in range(2)]
    expected = {e["failure"]["executor_id"]["value"]: e for e in events(trace, "FAILURE")}
    for failure in failures:
        b.match(failure, expected[failure["failure"]["executor_id"]["value"]], "FAILURE")
    assert sandbox_kills(master) == env_note(trace, "KILL events"), "the cap reaches the custom executors' KILL"

    operator_reply(master, trace, b, "(r2)")  # REACTIVATE refused while DRAINING
    operator_reply(master, trace, b, "(s1)")
    operator_reply(master, trace, b, "(s2)")
    for status in held:
        scheduler.acknowledge(status)
    a = b.values["<AGENT_ID_1>"]
    wait_until(lambda: master.state()["slaves"][0].get("drain_info", {}).get("state") == "DRAINED", 10,
               message=f"agent {a} DRAINED")
    operator_reply(master, trace, b, "(s3)")
    operator_reply(master, trace, b, "(s4)")
    assert_none_within(scheduler, "OFFERS", 1.5, from_agent(a))  # drained: no offer, however many rounds

    operator_reply(master, trace, b, "(r3)")
    expect_offer(scheduler, trace, b, "<AGENT_ID_1>", 2)
    operator_reply(master, trace, b, "(s5)")
    scheduler.teardown()
    scheduler.close()


def _trap_set(master: LocalMaster) -> bool:
    """task-trap's shell has run its ``trap``: its loop's ``sleep`` runs (a drain right at
    TASK_RUNNING could beat the trap, as the recorder's first take of trace 14 showed)."""
    names = []
    for process in processes_under(master.work_dir):
        try:
            names.append(process.name())
        except psutil.Error:
            continue
    return "sleep" in names


# -- 15 -------------------------------------------------------------------------------------------
def test_deactivate_stops_offers_keeps_tasks_and_reactivate_offers_again(make_master):
    master, b = start(make_master)
    trace = load("15-deactivate-reactivate.jsonl")
    scheduler = subscribe_like(trace, master, b)
    expect_offer(scheduler, trace, b, "<AGENT_ID_1>", 0)
    expect_offer(scheduler, trace, b, "<AGENT_ID_2>", 0)
    accept, response = first_call(trace, "ACCEPT")
    assert_reply(replay(scheduler, accept, b), response, b)
    updates_until(scheduler, trace, b, {("task-sleep", "TASK_STARTING"), ("task-sleep", "TASK_RUNNING")})
    expect_offer(scheduler, trace, b, "<AGENT_ID_1>", 1)
    for note in ("(r1)", "(r2)", "(r3)", "(d1)"):
        operator_reply(master, trace, b, note)
    expect_event(scheduler, trace, b, "RESCIND", 0)
    assert scheduler.stream is not None
    assert_none_within(scheduler, "OFFERS", 2.5, from_agent(b.values["<AGENT_ID_1>"]))  # trace: none in 3 s
    for note in ("(s1)", "(s2)", "(d2)", "(d3)"):
        operator_reply(master, trace, b, note)
    expect_offer(scheduler, trace, b, "<AGENT_ID_1>", 2)
    operator_reply(master, trace, b, "(s3)")
    reconcile, response = first_call(trace, "RECONCILE")
    assert_reply(replay(scheduler, reconcile, b), response, b)
    b.match(scheduler.next_update(), update(trace, "task-sleep", "TASK_RUNNING", 1), "implicit reconcile")
    for note in ("(d4)", "(s4)", "(d5)"):
        operator_reply(master, trace, b, note)
    scheduler.teardown()
    scheduler.close()


# -- 16 -------------------------------------------------------------------------------------------
def test_maintenance_schedule_inverse_offers_and_their_answers(make_master):
    master, b = start(make_master)
    trace = load("16-maintenance-inverse-offers.jsonl")
    b.bind("<START_NS_1>", int((time.time() + 60) * 1e9), "window start")
    b.bind("<START_NS_2>", b.values["<START_NS_1>"] + 30_000_000_000, "moved window start")
    scheduler = subscribe_like(trace, master, b)
    expect_offer(scheduler, trace, b, "<AGENT_ID_1>", 0)
    expect_offer(scheduler, trace, b, "<AGENT_ID_2>", 0)
    accept, response = first_call(trace, "ACCEPT")
    assert_reply(replay(scheduler, accept, b), response, b)
    updates_until(scheduler, trace, b, {("task-sleep", "TASK_STARTING"), ("task-sleep", "TASK_RUNNING")})
    expect_offer(scheduler, trace, b, "<AGENT_ID_1>", 1)
    assert scheduler.stream is not None

    operator_reply(master, trace, b, "(g0)")
    scheduled = time.monotonic()
    operator_reply(master, trace, b, "(m1)")
    assert_rescinds(scheduler, trace, b, 0, 2)  # every agent's open offer, not only A's
    expect_offer(scheduler, trace, b, "<AGENT_ID_1>", 2)  # with the unavailability
    expect_event(scheduler, trace, b, "INVERSE_OFFERS", 0)
    assert time.monotonic() - scheduled < 1.0, "trace: 0.08 s"
    expect_offer(scheduler, trace, b, "<AGENT_ID_2>", 1)  # offered again, without unavailability
    assert_none_within(scheduler, "INVERSE_OFFERS", 3.0)  # unanswered: not repeated
    for note in ("(g1)", "(g2)", "(g3)", "(g4)"):
        operator_reply(master, trace, b, note)

    replay_note(scheduler, trace, b, "(i1)")
    declined = time.monotonic()
    expect_event(scheduler, trace, b, "INVERSE_OFFERS", 1, timeout=15)
    assert 5.0 <= time.monotonic() - declined < 7.5, "the default 5 s filter (trace: 5.5 s)"
    operator_reply(master, trace, b, "(g5)")
    replay_note(scheduler, trace, b, "(i2)")
    accepted = time.monotonic()
    expect_event(scheduler, trace, b, "INVERSE_OFFERS", 2, timeout=15)
    assert 2.0 <= time.monotonic() - accepted < 4.5, "its 2 s filter (trace: 3.0 s)"
    for note in ("(g6)", "(g7)", "(i3)", "(r1)", "(r2)", "(r3)", "(r4)"):
        if call_with_note(trace, note)[0]["path"] == "/api/v1/scheduler":
            replay_note(scheduler, trace, b, note)
        else:
            operator_reply(master, trace, b, note)

    operator_reply(master, trace, b, "(m2)")
    assert_rescinds(scheduler, trace, b, 2, 4)
    expect_event(scheduler, trace, b, "RESCIND_INVERSE_OFFER", 0)
    expect_offer(scheduler, trace, b, "<AGENT_ID_1>", 3)
    expect_event(scheduler, trace, b, "INVERSE_OFFERS", 3)
    operator_reply(master, trace, b, "(m3)")
    expect_event(scheduler, trace, b, "RESCIND_INVERSE_OFFER", 1)
    expect_offer(scheduler, trace, b, "<AGENT_ID_2>", 2)
    assert_rescinds(scheduler, trace, b, 4, 6)
    expect_offer(scheduler, trace, b, "<AGENT_ID_1>", 4)  # without unavailability
    assert_none_within(scheduler, "INVERSE_OFFERS", 2.0)
    operator_reply(master, trace, b, "(g8)")
    scheduler.teardown()
    scheduler.close()


# -- 17 -------------------------------------------------------------------------------------------
def test_machine_down_loses_the_tasks_and_removes_the_agent_machine_up_clears_it(make_master):
    master, b = start(make_master)
    trace = load("17-machine-down-up.jsonl")
    b.bind("<START_NS_1>", int((time.time() + 60) * 1e9), "window start")
    scheduler = subscribe_like(trace, master, b)
    expect_offer(scheduler, trace, b, "<AGENT_ID_1>", 0)
    expect_offer(scheduler, trace, b, "<AGENT_ID_2>", 0)
    accept, response = first_call(trace, "ACCEPT")
    assert_reply(replay(scheduler, accept, b), response, b)
    updates_until(scheduler, trace, b, {("task-sleep", "TASK_STARTING"), ("task-sleep", "TASK_RUNNING"),
                                        ("task-exec", "TASK_RUNNING")})
    expect_offer(scheduler, trace, b, "<AGENT_ID_1>", 1)
    operator_reply(master, trace, b, "(m1)")
    expect_offer(scheduler, trace, b, "<AGENT_ID_1>", 2)
    expect_event(scheduler, trace, b, "INVERSE_OFFERS", 0)

    operator_reply(master, trace, b, "(m2)")
    lost = updates_until(scheduler, trace, b, {("task-sleep", "TASK_LOST"), ("task-exec", "TASK_LOST")})
    assert all("uuid" not in status for status in lost)
    expect_event(scheduler, trace, b, "RESCIND_INVERSE_OFFER", 0)
    expect_event(scheduler, trace, b, "FAILURE", 0)
    a_sandboxes = master.work_dir / "agents" / b.values["<AGENT_ID_1>"]
    wait_until(lambda: not processes_under(a_sandboxes), 15, message="agent A's tasks to be gone (it shut down)")
    for note in ("(g1)", "(s1)", "(r1)", "(m3)", "(g2)", "(g3)"):
        operator_reply(master, trace, b, note)
    reconcile, response = first_call(trace, "RECONCILE")
    assert_reply(replay(scheduler, reconcile, b), response, b)
    b.match(scheduler.next_update(), update(trace, "task-sleep", "TASK_LOST", 1), "reconciled")
    scheduler.teardown()
    scheduler.close()


def test_every_recorded_call_is_replayed():
    """The tests above replay every call with a note; a new note in a re-recorded trace shows here."""
    replayed = {
        "13-drain-killing-state": {"(r1)", "(d1)", "(r2)", "(s1)", "(s2)", "(s3)", "(s4)", "(r3)", "(s5)"},
        "15-deactivate-reactivate": {"(r1)", "(r2)", "(r3)", "(d1)", "(s1)", "(s2)", "(d2)", "(d3)", "(s3)",
                                     "(d4)", "(s4)", "(d5)"},
        "16-maintenance-inverse-offers": {"(g0)", "(m1)", "(g1)", "(g2)", "(g3)", "(g4)", "(i1)", "(g5)", "(i2)",
                                          "(g6)", "(g7)", "(i3)", "(r1)", "(r2)", "(r3)", "(r4)", "(m2)", "(m3)", "(g8)"},
        "17-machine-down-up": {"(m1)", "(m2)", "(g1)", "(s1)", "(r1)", "(m3)", "(g2)", "(g3)"},
    }
    replayed["14-drain-no-killing-state"] = replayed["13-drain-killing-state"]
    for name, notes in replayed.items():
        recorded = {c["note"].split(" ")[0] for c, _ in calls(load(f"{name}.jsonl")) if c.get("note")}
        assert recorded == notes, name


@pytest.fixture(autouse=True)
def _bounded(request):
    started = time.monotonic()
    yield
    assert time.monotonic() - started < 60, f"{request.node.name} took too long"

