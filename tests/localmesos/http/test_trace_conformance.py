"""Replays the recorded Mesos 1.12 scenarios 01-08 against LocalMaster.

Each test sends the same calls as the trace recorder (raw http.client) and
compares statuses, headers, bodies and events with the trace files; ids,
uuids, timestamps and pids are matched through consistent placeholder
bindings (see tests/localmesos/traces.py, Bindings).
"""
from __future__ import annotations

import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.localmesos.sandbox_procs import EXECUTORS, assert_no_processes
from tests.localmesos.scheduler_client import (EventStreamClient, RawScheduler, http_call, open_stream, wait_until)
from tests.localmesos.traces import Bindings, call_with_note, calls, events, load, load_json, raw_frame, update

from localmesos import LocalMaster

# Keys the embedded master leaves out of /state: no --log_dir and no git build info.
STATE_KEYS_NOT_EMULATED = {"log_dir", "git_sha", "git_branch"}
STATE_KEYS_NOT_COMPARED = {"flags", "build_date", "build_time", "build_user"}


def bindings_for(master: LocalMaster) -> Bindings:
    (agent_endpoint,) = master.agent_endpoints.values()
    master_port = int(master.address.rsplit(":", 1)[1])
    agent_port = int(agent_endpoint.rsplit(":", 1)[1])
    return Bindings(ports={5050: master_port, 5051: agent_port})


def subscribe_like(trace: list[dict[str, Any]], master: LocalMaster, b: Bindings,
                   stream: str | None = None, heartbeat: float = 15.0) -> RawScheduler:
    """Send the trace's SUBSCRIBE and check the reply head and SUBSCRIBED/HEARTBEAT."""
    call, response = next((c, r) for c, r in calls(trace)
                          if c["body"] and isinstance(c["body"], dict) and c["body"].get("type") == "SUBSCRIBE"
                          and c.get("stream", stream) == stream and r["http_status"] == 200
                          and c["headers"].get("Accept") == "application/json")
    scheduler = RawScheduler(master.address)
    status, headers, client, _ = open_stream(master.address, call["path"], b.fill(call["body"]), call["headers"])
    assert status == response["http_status"] == 200
    assert_stream_head(headers, response["headers"])
    assert client is not None
    scheduler.stream = client
    scheduler.stream_id = headers["Mesos-Stream-Id"]
    b.bind(response["headers"]["Mesos-Stream-Id"], scheduler.stream_id, "Mesos-Stream-Id")
    subscribed = client.next(heartbeats=True)
    expected = json.loads(json.dumps(events(trace, "SUBSCRIBED", stream=stream)[0]))
    expected["subscribed"]["heartbeat_interval_seconds"] = heartbeat
    b.match(subscribed, expected)
    scheduler.framework_id = subscribed["subscribed"]["framework_id"]["value"]
    # The first HEARTBEAT follows SUBSCRIBED at once, before anything else.
    assert client.next(heartbeats=True) == {"type": "HEARTBEAT"}
    return scheduler


def assert_stream_head(actual: dict[str, str], expected: dict[str, str]) -> None:
    assert actual.get("Transfer-Encoding") == expected["Transfer-Encoding"] == "chunked"
    assert actual.get("Content-Type") == expected["Content-Type"]
    assert "Content-Length" not in actual
    assert ("Mesos-Stream-Id" in actual) == ("Mesos-Stream-Id" in expected)
    if "Mesos-Stream-Id" in actual:
        uuid.UUID(actual["Mesos-Stream-Id"])


def assert_reply(reply: Any, response: dict[str, Any], b: Bindings) -> None:
    """HTTP status, the headers that matter and the body of a non-streaming reply."""
    assert reply.status == response["http_status"], (reply, response)
    expected_headers = response["headers"]
    assert reply.headers.get("Content-Type") == expected_headers.get("Content-Type"), reply
    if isinstance(response["body"], str):
        b.match(reply.body, response["body"], "reply body")
        assert reply.headers["Content-Length"] == str(len(reply.body.encode()))
    else:
        assert reply.body is None, reply
        assert reply.headers.get("Content-Length") == expected_headers.get("Content-Length") == "0"


def replay(scheduler: RawScheduler, trace_call: dict[str, Any], b: Bindings) -> Any:
    headers = dict(trace_call["headers"])
    if "Mesos-Stream-Id" in headers:
        headers["Mesos-Stream-Id"] = b.fill(headers["Mesos-Stream-Id"])
    body = trace_call["body"]
    if isinstance(body, str):
        return http_call(scheduler.address, trace_call["method"], trace_call["path"], raw=body.encode(),
                         headers=headers)
    return http_call(scheduler.address, trace_call["method"], trace_call["path"], b.fill(body), headers)


def first_call(trace: list[dict[str, Any]], kind: str, nth: int = 0) -> tuple[dict[str, Any], dict[str, Any]]:
    found = [(c, r) for c, r in calls(trace) if isinstance(c["body"], dict) and c["body"].get("type") == kind]
    return found[nth]


def match_offers(scheduler: RawScheduler, trace: list[dict[str, Any]], nth: int, b: Bindings,
                 timeout: float = 10.0, early: list[dict[str, Any]] | None = None) -> None:
    """The next OFFERS event matches the trace's ``nth``: the first of ``early`` (those seen while
    waiting for something else), else the next on the stream."""
    assert scheduler.stream is not None
    event = early.pop(0) if early else scheduler.stream.wait_for(lambda e: e["type"] == "OFFERS", timeout)
    b.match(event, events(trace, "OFFERS")[nth], f"OFFERS[{nth}]")


def expect_update(scheduler: RawScheduler, trace: list[dict[str, Any]], task_id: str, state: str,
                  b: Bindings, nth: int = 0) -> dict[str, Any]:
    status = scheduler.next_update(task_id=task_id)
    b.match(status, update(trace, task_id, state, nth), f"UPDATE {task_id} {state}")
    return status


def teardown_like(scheduler: RawScheduler, trace: list[dict[str, Any]], b: Bindings) -> None:
    call, response = first_call(trace, "TEARDOWN")
    reply = scheduler.framework_call("TEARDOWN")
    assert_reply(reply, response, b)
    assert scheduler.stream is not None
    assert scheduler.stream.closed.wait(5), "TEARDOWN must close the subscription stream"
    scheduler.close()


def compare_state(actual: dict[str, Any], expected: dict[str, Any], b: Bindings) -> None:
    assert set(actual) == set(expected) - STATE_KEYS_NOT_EMULATED
    assert isinstance(actual["flags"], dict) and actual["flags"]["allocation_interval"]
    assert actual["version"] == expected["version"] == "1.12.0"
    trimmed = {k: v for k, v in actual.items() if k not in STATE_KEYS_NOT_COMPARED}
    wanted = {k: v for k, v in expected.items() if k not in STATE_KEYS_NOT_COMPARED | STATE_KEYS_NOT_EMULATED}
    b.match(trimmed, wanted, "state")


# -- 01 -----------------------------------------------------------------------
def test_01_subscribe_offer_heartbeat_state_teardown(make_master):
    master = make_master(heartbeat_interval=0.5)
    trace = load("01-subscribe.jsonl")
    b = bindings_for(master)

    version_call, version_response = calls(trace)[0]
    reply = http_call(master.address, "GET", version_call["path"])
    assert reply.status == version_response["http_status"] == 200
    assert reply.headers["Content-Type"] == "application/json"
    assert reply.body["version"] == version_response["body"]["version"] == "1.12.0"
    assert set(reply.body) <= set(version_response["body"])
    assert tuple(int(n) for n in reply.body["version"].split(".")) >= (1, 0, 0)  # pymesos parses it

    scheduler = subscribe_like(trace, master, b, heartbeat=0.5)
    stream = scheduler.stream
    assert stream is not None
    offers = stream.next(heartbeats=True)
    b.match(offers, events(trace, "OFFERS")[0])
    # Exact RecordIO framing: length prefix, compact JSON, same key order.
    raw = [line["raw_recordio"] for line in trace if "raw_recordio" in line]
    assert stream.raw_frames[0] == raw_frame(raw[0].replace('"heartbeat_interval_seconds":15.0',
                                                            '"heartbeat_interval_seconds":0.5'), b)
    assert stream.raw_frames[1] == raw[1].encode() == b'20\n{"type":"HEARTBEAT"}'

    started = time.monotonic()
    heartbeat = stream.next(timeout=5, heartbeats=True)
    assert heartbeat == {"type": "HEARTBEAT"}, "an unanswered offer is not rescinded"
    assert 0.3 < time.monotonic() - started < 2.0

    compare_state(master.state(), load_json("01-state.json"), b)
    state_reply = http_call(master.address, "GET", "/state")
    assert state_reply.status == 200 and state_reply.headers["Content-Type"] == "application/json"
    assert http_call(master.address, "GET", "/master/state").body["id"] == state_reply.body["id"]

    teardown_like(scheduler, trace, b)


# -- 02 -----------------------------------------------------------------------
def test_02_command_task(make_master):
    master = make_master()
    trace = load("02-command-task.jsonl")
    b = bindings_for(master)
    scheduler = subscribe_like(trace, master, b)
    match_offers(scheduler, trace, 0, b)

    accept, response = first_call(trace, "ACCEPT")
    assert_reply(replay(scheduler, accept, b), response, b)
    for state in ("TASK_STARTING", "TASK_RUNNING", "TASK_FINISHED"):
        expect_update(scheduler, trace, "task-echo", state, b)
    match_offers(scheduler, trace, 1, b)  # the finished task's resources come back

    state = master.state()
    compare_state(state, load_json("02-state-after.json"), b)
    sandbox = next(master.work_dir.glob("agents/*/frameworks/*/executors/task-echo/runs/latest"))
    assert (sandbox / "stdout").read_text() == "hi\n"
    teardown_like(scheduler, trace, b)


# -- 03 -----------------------------------------------------------------------
def test_03_failing_tasks(make_master):
    master = make_master()
    trace = load("03-failing-task.jsonl")
    b = bindings_for(master)
    scheduler = subscribe_like(trace, master, b)
    match_offers(scheduler, trace, 0, b)
    accept, response = first_call(trace, "ACCEPT")
    assert_reply(replay(scheduler, accept, b), response, b)

    expected = {tid: [update(trace, tid, s) for s in ("TASK_STARTING", "TASK_RUNNING", "TASK_FAILED")]
                for tid in ("task-exit3", "task-kill9")}
    seen: dict[str, list[dict[str, Any]]] = {"task-exit3": [], "task-kill9": []}
    # A task's TASK_FAILED comes only once its TASK_RUNNING is acknowledged, while its resources
    # come back at once: on a busy machine the offer of them can come before that update (so on
    # real Mesos too), and must not be skipped while the updates are awaited.
    offers: list[dict[str, Any]] = []
    assert scheduler.stream is not None
    while any(len(v) < 3 for v in seen.values()):
        event = scheduler.stream.wait_for(lambda e: e["type"] in ("UPDATE", "OFFERS"))
        if event["type"] == "OFFERS":
            offers.append(event)
            continue
        status = event["update"]["status"]
        if "uuid" in status:
            scheduler.acknowledge(status)
        seen[status["task_id"]["value"]].append(status)
    for task_id, statuses in seen.items():
        for actual, wanted in zip(statuses, expected[task_id]):
            b.match(actual, wanted, f"{task_id} {wanted['state']}")
    assert seen["task-exit3"][-1]["message"] == "Command exited with status 3"
    assert seen["task-kill9"][-1]["message"] == "Command terminated with signal Killed"
    match_offers(scheduler, trace, 1, b, early=offers)
    teardown_like(scheduler, trace, b)


# -- 04 -----------------------------------------------------------------------
def test_04_invalid_calls(make_master):
    master = make_master()
    trace = load("04-invalid.jsonl")
    b = bindings_for(master)
    anonymous = RawScheduler(master.address)
    for note in ("(e1)", "(e2)", "(e3)", "(f1)", "(f2)", "(f3)", "(f4)", "(f5)"):
        call, response = call_with_note(trace, note)
        assert_reply(replay(anonymous, call, b), response, b)

    scheduler = subscribe_like(trace, master, b)
    match_offers(scheduler, trace, 0, b)
    for note in ("(d1)", "(d2)", "(e4)", "(g1)", "(g2)", "(g3)"):
        call, response = call_with_note(trace, note)
        assert_reply(replay(scheduler, call, b), response, b)

    # (a) unknown offer id: TASK_LOST / REASON_INVALID_OFFERS, no uuid, before the 202.
    b.bind("<MASTER_ID_1>-O999", f"{b.values['<MASTER_ID_1>']}-O999", "made-up offer")
    accept, response = first_call(trace, "ACCEPT", 0)
    assert_reply(replay(scheduler, accept, b), response, b)
    expect_update(scheduler, trace, "task-badoffer", "TASK_LOST", b)

    # (b) more than offered: TASK_ERROR with Mesos' resource arithmetic in the text.
    accept, response = first_call(trace, "ACCEPT", 1)
    assert_reply(replay(scheduler, accept, b), response, b)
    expect_update(scheduler, trace, "task-toobig", "TASK_ERROR", b)
    match_offers(scheduler, trace, 1, b)

    # (c) duplicate task ids, across calls and within one call.
    accept, response = first_call(trace, "ACCEPT", 2)
    assert_reply(replay(scheduler, accept, b), response, b)
    expect_update(scheduler, trace, "task-dup", "TASK_STARTING", b)
    expect_update(scheduler, trace, "task-dup", "TASK_RUNNING", b)
    match_offers(scheduler, trace, 2, b)
    accept, response = first_call(trace, "ACCEPT", 3)
    assert_reply(replay(scheduler, accept, b), response, b)
    expect_update(scheduler, trace, "task-dup", "TASK_ERROR", b)
    expect_update(scheduler, trace, "task-twin", "TASK_ERROR", b)
    for state in ("TASK_STARTING", "TASK_RUNNING", "TASK_FINISHED"):
        expect_update(scheduler, trace, "task-twin", state, b)
    assert scheduler.stream is not None
    offers = [e for e in scheduler.stream.received if e["type"] == "OFFERS"]
    offers += [scheduler.stream.wait_for(lambda e: e["type"] == "OFFERS") for _ in range(5 - len(offers))]
    b.match(offers[3], events(trace, "OFFERS")[3], "OFFERS[3]")
    b.match(offers[4], events(trace, "OFFERS")[4], "OFFERS[4]")
    teardown_like(scheduler, trace, b)


# -- 05 -----------------------------------------------------------------------
def test_05_decline_filters_suppress_revive(make_master):
    """Trace 05 semantics, with a shorter allocation interval and first filter."""
    interval = 0.25
    master = make_master(allocation_interval=interval)
    trace = load("05-decline-revive.jsonl")
    b = bindings_for(master)
    scheduler = subscribe_like(trace, master, b)
    stream = scheduler.stream
    assert stream is not None

    def decline(offer: dict[str, Any], filters: dict[str, Any] | None) -> tuple[float, float]:
        """(before the call, after its answer): the master starts the filter in between."""
        payload: dict[str, Any] = {"offer_ids": [offer["id"]]}
        if filters is not None:
            payload["filters"] = filters
        sent = time.monotonic()
        reply = scheduler.framework_call("DECLINE", payload)
        assert reply.status == 202 and reply.headers == {"Content-Length": "0"}
        return sent, time.monotonic()

    offer = scheduler.next_offers()[0]
    b.match(offer, events(trace, "OFFERS")[0]["offers"]["offers"][0])
    sent, answered = decline(offer, {"refuse_seconds": 1})
    offer = scheduler.next_offers(timeout=5)[0]
    assert time.monotonic() - sent >= 1.0 and time.monotonic() - answered < 1.0 + 3 * interval

    sent, answered = decline(offer, None)  # the default filter lasts 5 s
    offer = scheduler.next_offers(timeout=10)[0]
    assert time.monotonic() - sent >= 5.0 and time.monotonic() - answered < 5.0 + 3 * interval

    assert scheduler.framework_call("SUPPRESS").status == 202
    decline(offer, {"refuse_seconds": 0})
    stream.expect_silence(6 * interval)

    revived = time.monotonic()
    assert scheduler.framework_call("REVIVE").status == 202
    offer = scheduler.next_offers(timeout=2)[0]
    assert time.monotonic() - revived < interval, "REVIVE allocates at once"

    decline(offer, {"refuse_seconds": 30})
    stream.expect_silence(2 * interval)
    revived = time.monotonic()
    assert scheduler.framework_call("REVIVE").status == 202
    offer = scheduler.next_offers(timeout=2)[0]
    assert time.monotonic() - revived < interval, "REVIVE clears decline filters"
    b.match(offer, events(trace, "OFFERS")[-1]["offers"]["offers"][0])
    teardown_like(scheduler, trace, b)


# -- 06 -----------------------------------------------------------------------
def test_06_kill_and_reconcile(make_master):
    master = make_master()
    trace = load("06-kill-reconcile.jsonl")
    b = bindings_for(master)
    scheduler = subscribe_like(trace, master, b)
    match_offers(scheduler, trace, 0, b)
    accept, response = first_call(trace, "ACCEPT")
    assert_reply(replay(scheduler, accept, b), response, b)
    running = 0
    while running < 2:
        status = scheduler.next_update()
        task_id = status["task_id"]["value"]
        b.match(status, update(trace, task_id, status["state"]), f"{task_id} {status['state']}")
        running += status["state"] == "TASK_RUNNING"

    kill, response = first_call(trace, "KILL", 0)
    assert_reply(replay(scheduler, kill, b), response, b)
    killed = expect_update(scheduler, trace, "task-sleep-kill", "TASK_KILLED", b)
    assert killed["message"] == "Command terminated with signal Terminated"
    match_offers(scheduler, trace, 1, b)

    kill, response = first_call(trace, "KILL", 1)
    assert_reply(replay(scheduler, kill, b), response, b)
    expect_update(scheduler, trace, "task-never-launched", "TASK_LOST", b)

    reconcile, response = first_call(trace, "RECONCILE", 0)
    assert_reply(replay(scheduler, reconcile, b), response, b)
    expected = [e["update"]["status"] for e in events(trace, "UPDATE")
                if e["update"]["status"].get("reason") == "REASON_RECONCILIATION"
                and e["update"]["status"]["task_id"]["value"] != "task-never-launched"]
    for index, wanted in enumerate(expected[:4]):
        b.match(scheduler.next_update(), wanted, f"explicit reconcile answer {index}")

    reconcile, response = first_call(trace, "RECONCILE", 1)
    assert_reply(replay(scheduler, reconcile, b), response, b)
    b.match(scheduler.next_update(), expected[4], "implicit reconcile answer")
    assert scheduler.stream is not None
    scheduler.stream.expect_silence(0.5, types=("UPDATE",))

    teardown_like(scheduler, trace, b)
    note = [line["body"] for line in trace if line["dir"] == "env" and "completed_tasks" in line["body"]][0]
    state = master.state()
    assert len(state["frameworks"]) == note["frameworks_active"] == 0
    completed = state["completed_frameworks"][0]["completed_tasks"]
    assert sorted([t["id"], t["state"]] for t in completed) == sorted(note["completed_tasks"])
    assert_no_processes(master.work_dir)


# -- 07 -----------------------------------------------------------------------
def recorder_log(master: LocalMaster) -> list[dict[str, Any]]:
    logs = list(master.work_dir.glob("agents/*/frameworks/*/executors/exec-raw-1/runs/*/recorder.log"))
    if not logs:
        return []
    return [json.loads(line) for line in logs[0].read_text().splitlines() if line.strip()]


def wait_log(master: LocalMaster, count: int, what: str) -> list[dict[str, Any]]:
    return wait_until(lambda: (lambda entries: entries if len(entries) >= count else None)(recorder_log(master)),
                      timeout=20, message=what)


def test_07_custom_executor(make_master):
    master = make_master()
    trace = load("07-custom-executor.jsonl")
    b = bindings_for(master)
    b.bind("<VENV>", sys.prefix, "venv")
    b.bind("<RECORDER_DIR>", str(EXECUTORS), "recorder dir")
    assert Path(sys.prefix, "bin", "python").exists()
    scheduler = subscribe_like(trace, master, b)
    match_offers(scheduler, trace, 0, b)
    accept, response = first_call(trace, "ACCEPT")
    assert_reply(replay(scheduler, accept, b), response, b)

    # The executor's environment, argv and cwd.
    entries = wait_log(master, 3, "executor subscription")
    env_entry = next(line for line in trace if line["dir"] == "env" and "argv" in line)
    env = entries[0]["env"]
    ignored = {"LC_CTYPE"}  # Python's locale coercion, redacted in the trace too
    assert set(env) - ignored == set(env_entry["body"]) - ignored
    b.bind("<AGENT_WORK_DIR>", str(master.work_dir), "work dir")
    for key, value in env_entry["body"].items():
        if key in ignored or key == "PATH":
            continue
        # Documented layout difference: <work_dir>/agents/... instead of <work_dir>/slaves/...
        b.match(env[key], value.replace("/slaves/", "/agents/"), f"env.{key}")
    assert entries[0]["cwd"] == env["MESOS_DIRECTORY"] == env["MESOS_SANDBOX"]
    b.match(entries[0]["argv"], env_entry["argv"], "argv")

    executor_calls = [line for line in trace if line["dir"] == "executor-call"]
    executor_events = [line for line in trace if line["dir"] == "executor-event"]
    subscribe = entries[1]
    b.match(subscribe["call"], executor_calls[0]["body"])
    assert subscribe["http_status"] == executor_calls[0]["http_status"] == 200
    assert_stream_head(subscribe["response_headers"], executor_calls[0]["response_headers"])
    b.match(entries[2]["event"], executor_events[0]["body"], "executor SUBSCRIBED")
    assert entries[2]["raw"].encode() == raw_frame(executor_events[0]["raw_recordio"], b)

    entries = wait_log(master, 6, "LAUNCH, UPDATE and ACKNOWLEDGED")
    b.match(entries[3]["event"], executor_events[1]["body"], "executor LAUNCH")
    b.match(entries[4]["call"], executor_calls[1]["body"], "executor UPDATE")
    assert entries[4]["http_status"] == 202 and entries[4]["response_headers"] == {"Content-Length": "0"}
    b.match(entries[5]["event"], executor_events[2]["body"], "ACKNOWLEDGED straight away")
    expect_update(scheduler, trace, "task-custom", "TASK_RUNNING", b)

    message, response = first_call(trace, "MESSAGE")
    assert_reply(replay(scheduler, message, b), response, b)
    assert scheduler.stream is not None
    reply = scheduler.stream.wait_for(lambda e: e["type"] == "MESSAGE")
    b.match(reply, events(trace, "MESSAGE")[0], "MESSAGE from the executor")
    expect_update(scheduler, trace, "task-custom", "TASK_FINISHED", b)
    entries = wait_log(master, 10, "executor MESSAGE and FINISHED")
    b.match(entries[6]["event"], executor_events[3]["body"], "executor MESSAGE")
    match_offers(scheduler, trace, 1, b)  # lists executor_ids; the executor keeps its resources

    shutdown, response = first_call(trace, "SHUTDOWN")
    assert_reply(replay(scheduler, shutdown, b), response, b)
    failure = scheduler.stream.wait_for(lambda e: e["type"] == "FAILURE")
    b.match(failure, events(trace, "FAILURE")[0])
    entries = wait_log(master, 11, "executor SHUTDOWN")
    assert [e.get("event") for e in entries if "event" in e][-1] == {"type": "SHUTDOWN"}

    state = master.state()
    expected_task = load_json("07-state-during.json")["frameworks"][0]["completed_tasks"][0]
    b.match(state["frameworks"][0]["completed_tasks"][0], expected_task, "completed task")
    assert state["frameworks"][0]["executors"] == []
    teardown_like(scheduler, trace, b)


# -- 08 -----------------------------------------------------------------------
def test_08_failover_and_removal(make_master):
    master = make_master()
    trace = load("08-failover.jsonl")
    b = bindings_for(master)
    first = subscribe_like(trace, master, b, stream="1")
    match_offers(first, trace, 0, b)
    accept, response = first_call(trace, "ACCEPT")
    assert_reply(replay(first, accept, b), response, b)
    expect_update(first, trace, "task-failover", "TASK_STARTING", b)
    expect_update(first, trace, "task-failover", "TASK_RUNNING", b)
    match_offers(first, trace, 1, b)

    second = subscribe_like(trace, master, b, stream="2")
    assert second.stream_id != first.stream_id
    assert first.stream is not None and second.stream is not None
    error = first.stream.next(heartbeats=True)
    b.match(error, events(trace, "ERROR", stream="1")[0])
    assert first.stream.next(timeout=5) is None, "the old stream is closed after the ERROR"
    assert not any(e["type"] == "RESCIND" for e in first.stream.received)
    match_offers(second, trace, 2, b)

    revive, response = first_call(trace, "REVIVE")
    assert_reply(replay(first, revive, b), response, b)
    reconcile, response = first_call(trace, "RECONCILE")
    assert_reply(replay(second, reconcile, b), response, b)
    b.match(second.next_update(), update(trace, "task-failover", "TASK_RUNNING", 1))

    state = master.state()
    expected = load_json("08-state-before-teardown.json")
    compare_state(state, expected, b)

    teardown_like(second, trace, b)
    note = [line["body"] for line in trace if line["dir"] == "env" and "frameworks" in line["body"]][0]
    state = master.state()
    assert len(state["frameworks"]) == note["frameworks"] == 0
    completed = state["completed_frameworks"][0]
    wanted = note["completed_frameworks"][0]
    assert completed["id"] == b.values[wanted["id"]]
    assert (completed["active"], completed["connected"], completed["tasks"]) == \
        (wanted["active"], wanted["connected"], wanted["tasks"])
    (task,) = completed["completed_tasks"]
    assert [task["id"], task["state"], [s["state"] for s in task["statuses"]]] == wanted["completed_tasks"][0]

    call, response = [(c, r) for c, r in calls(trace) if c.get("stream") == "3"][0]
    status, headers, stream, _ = open_stream(master.address, call["path"], b.fill(call["body"]), call["headers"])
    assert status == response["http_status"] == 200
    assert_stream_head(headers, response["headers"])
    assert isinstance(stream, EventStreamClient)
    b.match(stream.next(heartbeats=True), events(trace, "ERROR", stream="3")[0])
    assert stream.next(timeout=5) is None
    stream.close()
    first.close()
    assert_no_processes(master.work_dir)


@pytest.fixture(autouse=True)
def _bounded(request):
    """Every scenario must finish well within the suite budget."""
    started = time.monotonic()
    yield
    assert time.monotonic() - started < 30, f"{request.node.name} took too long"
