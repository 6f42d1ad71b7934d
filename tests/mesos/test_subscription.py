"""The scheduler driver's decisions (tfmesos/mesos/subscription.py), as plain functions: where the
master is, what an answer to SUBSCRIBE means, the backoff, the heartbeat timeout, the calls, and
which callback each event goes to. The driver's I/O runs against masters in
tests/mesos/test_scheduler_driver.py and the real-Mesos suite."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tfmesos.mesos import subscription as sub

TRACES = Path(__file__).resolve().parents[1] / "data" / "mesos-traces"


@pytest.mark.parametrize("given, expected", [
    ("10.0.0.5:5050", sub.MasterUrl(address="10.0.0.5:5050")),
    ("master.example", sub.MasterUrl(address="master.example:5050")),
    ("http://10.0.0.5:5051", sub.MasterUrl(address="10.0.0.5:5051")),
    ("http://10.0.0.5:5051/", sub.MasterUrl(address="10.0.0.5:5051")),
    ("zk://h1:2181,h2:2181/mesos", sub.MasterUrl(zk_hosts="h1:2181,h2:2181", zk_path="/mesos")),
    ("zoo://h1:2181/a/b/", sub.MasterUrl(zk_hosts="h1:2181", zk_path="/a/b")),
])
def test_a_master_url_is_an_address_or_a_zookeeper_path(given: str, expected: sub.MasterUrl) -> None:
    assert sub.parse_master(given) == expected
    assert expected.detected == given.startswith(("zk", "zoo"))


@pytest.mark.parametrize("bad", ["zk://h1:2181", "zk:///mesos", "https://m:5050", ""])
def test_a_master_url_without_its_parts_is_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        sub.parse_master(bad)


@pytest.mark.parametrize("location, expected", [
    ("//10.0.0.7:5050/api/v1/scheduler", "10.0.0.7:5050"),  # what Mesos writes (protocol-relative)
    ("http://m2.example:5051/api/v1/scheduler", "m2.example:5051"),
    ("m3.example/api/v1/scheduler", "m3.example:5050"),
])
def test_a_redirect_names_the_leader(location: str, expected: str) -> None:
    assert sub.redirect_target(location, "10.0.0.5:5050") == expected


def test_a_redirect_without_a_master_is_an_error() -> None:
    with pytest.raises(ValueError, match="10.0.0.5:5050"):
        sub.redirect_target("", "10.0.0.5:5050")


def test_the_leader_is_the_lowest_sequence_of_the_json_nodes() -> None:
    children = ["log_replicas", "json.info_0000000012", "json.info_0000000009", "info_0000000001",
                "json.info_0000000010"]
    assert sub.leader_node(children) == "json.info_0000000009"
    assert sub.leader_node(["log_replicas"]) is None and sub.leader_node([]) is None
    # By number, not by string (a sequence past its ten digits would sort wrong as text).
    assert sub.leader_node(["json.info_10000000000", "json.info_9999999999"]) == "json.info_9999999999"


def test_the_leaders_address_is_read_from_its_master_info_as_mesos_writes_it() -> None:
    info = {"id": "b3f1", "ip": 16777343, "port": 5050, "pid": "master@127.0.0.1:5050", "hostname": "localhost",
            "version": "1.12.0", "address": {"hostname": "localhost", "ip": "127.0.0.1", "port": 5050}}
    assert sub.master_address(info) == "127.0.0.1:5050"
    assert sub.master_address({"hostname": "m1", "port": 5051}) == "m1:5051"
    with pytest.raises(ValueError):
        sub.master_address({"id": "x"})


@pytest.mark.parametrize("status, kind", [
    (200, sub.STREAM), (307, sub.REDIRECT), (503, sub.RETRY), (500, sub.RETRY), (404, sub.RETRY),
    (400, sub.REFUSED), (401, sub.REFUSED), (403, sub.REFUSED), (415, sub.REFUSED), (501, sub.RETRY),
])
def test_what_an_answer_to_subscribe_means(status: int, kind: str) -> None:
    assert sub.answer_kind(status) == kind


def test_a_refusal_says_the_status_and_the_masters_words() -> None:
    said = sub.refusal(400, "Bad Request", "Failed to validate scheduler::Call: Authenticated principal 'b' "
                                           "does not match principal 'a'\n")
    assert said == ("HTTP 400 Bad Request: Failed to validate scheduler::Call: Authenticated principal 'b' "
                    "does not match principal 'a'")
    assert sub.refusal(401, "Unauthorized", "") == "the master did not authenticate the framework (HTTP 401 Unauthorized)"
    assert "authenticate" in sub.refusal(401, "Unauthorized", "401 Unauthorized.")


def test_backoff_doubles_after_quick_failures_up_to_the_cap_and_resets_after_a_stable_stream() -> None:
    quick = 0
    delays = []
    for _ in range(8):
        quick = sub.quick_failures_after(quick, None)  # never got to SUBSCRIBED
        delays.append(sub.reconnect_delay(quick, 1.0))
    assert delays == [0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 15.0, 15.0]
    assert sub.quick_failures_after(quick, sub.STABLE_SECONDS - 1) == quick + 1  # a stream that dropped at once
    assert sub.quick_failures_after(quick, sub.STABLE_SECONDS) == 0
    assert sub.reconnect_delay(0, 1.0) == 0.0  # after a stream that stayed up: at once
    # The jitter scales a wait into its upper half, never past it.
    assert sub.reconnect_delay(3, 0.0) == 1.0 and sub.reconnect_delay(3, 0.5) == 1.5 and sub.reconnect_delay(3, 7) == 2.0


def test_a_stream_silent_for_five_heartbeats_is_dead() -> None:
    assert sub.stream_timeout(15.0) == 75.0
    assert sub.stream_timeout(15.0, misses=2) == 30.0
    assert sub.stream_timeout(None) is None and sub.stream_timeout(0) is None


def test_subscribe_carries_the_framework_id_in_both_places_for_failover() -> None:
    info = {"user": "u", "name": "n", "failover_timeout": 60}
    first = sub.subscribe_call(info, None)
    assert first == {"type": "SUBSCRIBE", "subscribe": {"framework_info": info}}
    again = sub.subscribe_call(info, "F-1")
    assert again["framework_id"] == {"value": "F-1"} == again["subscribe"]["framework_info"]["id"]
    assert "id" not in info, "the caller's FrameworkInfo is not changed"


def test_every_call_in_the_recorded_trace_has_the_shape_the_driver_builds() -> None:
    """The calls real Mesos 1.12 took (tests/data/mesos-traces) are the driver's ``call`` shapes."""
    seen = set()
    for trace in sorted(TRACES.glob("*.jsonl")):
        for line in trace.read_text().splitlines():
            record = json.loads(line)
            body = record.get("body")
            if record.get("dir") != "call" or not isinstance(body, dict) or body.get("type") in (None, "SUBSCRIBE") \
                    or "framework_id" not in body:  # (some are malformed on purpose: the master's 400s)
                continue
            kind = body["type"]
            payload = body.get(kind.lower())
            assert sub.call(kind, body["framework_id"]["value"], payload) == body, (trace.name, kind)
            seen.add(kind)
    assert {"ACCEPT", "DECLINE", "KILL", "ACKNOWLEDGE", "RECONCILE", "TEARDOWN"} <= seen, seen


def test_a_gangs_launch_is_one_accept_of_one_offer() -> None:
    body = sub.launch_call("F-1", "O-7", [{"name": "t"}], {"refuse_seconds": 2.0})
    assert body == {"type": "ACCEPT", "framework_id": {"value": "F-1"}, "accept": {
        "offer_ids": [{"value": "O-7"}], "operations": [{"type": "LAUNCH", "launch": {"task_infos": [{"name": "t"}]}}],
        "filters": {"refuse_seconds": 2.0}}}


def test_only_updates_with_a_uuid_are_acknowledged() -> None:
    status = {"task_id": {"value": "t"}, "agent_id": {"value": "S0"}, "state": "TASK_RUNNING", "uuid": "QM0E"}
    assert sub.acknowledgement(status) == {"agent_id": {"value": "S0"}, "task_id": {"value": "t"}, "uuid": "QM0E"}
    assert sub.acknowledgement({**status, "uuid": ""}) is None
    assert sub.acknowledgement({k: v for k, v in status.items() if k != "uuid"}) is None  # the master's own


@pytest.mark.parametrize("event, expected", [
    ({"type": "HEARTBEAT"}, ("processHeartBeat", [])),
    ({"type": "OFFERS", "offers": {"offers": [{"id": {"value": "O1"}}]}}, ("resourceOffers", [[{"id": {"value": "O1"}}]])),
    ({"type": "OFFERS", "offers": {}}, None),
    ({"type": "INVERSE_OFFERS", "inverse_offers": {"inverse_offers": [{"id": {"value": "I1"}}]}},
     ("inverseOffers", [[{"id": {"value": "I1"}}]])),
    ({"type": "RESCIND", "rescind": {"offer_id": {"value": "O1"}}}, ("offerRescinded", [{"value": "O1"}])),
    ({"type": "RESCIND_INVERSE_OFFER", "rescind_inverse_offer": {"inverse_offer_id": {"value": "I1"}}},
     ("inverseOfferRescinded", [{"value": "I1"}])),
    ({"type": "UPDATE", "update": {"status": {"state": "TASK_RUNNING"}}}, ("statusUpdate", [{"state": "TASK_RUNNING"}])),
    ({"type": "UPDATE_OPERATION_STATUS", "update_operation_status": {"status": {"state": "OPERATION_FINISHED"}}},
     ("operationStatusUpdate", [{"state": "OPERATION_FINISHED"}])),
    ({"type": "MESSAGE", "message": {"agent_id": {"value": "S0"}, "executor_id": {"value": "E"}, "data": "aGk="}},
     ("frameworkMessage", [{"value": "E"}, {"value": "S0"}, "aGk="])),
    ({"type": "FAILURE", "failure": {"agent_id": {"value": "S0"}}}, ("slaveLost", [{"value": "S0"}])),
    ({"type": "FAILURE", "failure": {"agent_id": {"value": "S0"}, "executor_id": {"value": "E"}, "status": 9}},
     ("executorLost", [{"value": "E"}, {"value": "S0"}, 9])),
    ({"type": "ERROR", "error": {"message": "Framework failed over"}}, ("error", ["Framework failed over"])),
    ({"type": "SOMETHING_NEW", "something_new": {}}, None),
    ({"type": "RESCIND"}, None),  # its sub-object missing
])
def test_each_event_goes_to_its_callback(event: dict, expected: tuple | None) -> None:
    assert sub.callback(event) == expected


def test_every_callback_the_events_name_is_one_the_adapter_answers() -> None:
    from tfmesos.mesos.driver import MesosAdapter

    names = {"processHeartBeat", "resourceOffers", "inverseOffers", "offerRescinded", "inverseOfferRescinded",
             "statusUpdate", "operationStatusUpdate", "frameworkMessage", "slaveLost", "executorLost", "error",
             "registered", "reregistered", "disconnected"}
    assert sorted(n for n in names if not callable(getattr(MesosAdapter, n, None))) == []
