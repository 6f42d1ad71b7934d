"""Roles, reservations, quota, weights, principals and ACLs on the embedded master, against traces
09-authz and 11-reservations-quota recorded from Mesos 1.12."""
from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest
from tests.localmesos.scheduler_client import RawScheduler, http_call, open_stream, wait_until
from tests.localmesos.traces import load

from localmesos.cli import team_settings
from localmesos.config import QuotaConfig

TRACE_RESOURCES = ("cpus(team-a):2;mem(team-a):1024;cpus:2;mem:1024;disk:1000;"
                   "ports(team-a):[31000-31005];ports:[31006-31010]")
ACLS = {"register_frameworks": [
    {"principals": {"values": ["team-a"]}, "roles": {"values": ["team-a"]}},
    {"principals": {"values": ["team-b"]}, "roles": {"values": ["team-b"]}},
    {"principals": {"type": "ANY"}, "roles": {"type": "NONE"}},
]}
CREDENTIALS = {"team-a": "secret-a", "team-b": "secret-b"}


def basic(principal: str) -> str:
    return "Basic " + base64.b64encode(f"{principal}:{CREDENTIALS[principal]}".encode()).decode()


def team_info(name: str, roles: list[str], **extra: Any) -> dict[str, Any]:
    info = {"user": "root", "name": name, "roles": roles,
            "capabilities": [{"type": "MULTI_ROLE"}, {"type": "RESERVATION_REFINEMENT"}]}
    info.update(extra)
    return info


def operator(master, body: dict[str, Any]):
    return http_call(master.address, "POST", "/api/v1", body, {"Content-Type": "application/json",
                                                               "Accept": "application/json"})


def _trace(name: str, key: str, value: str) -> dict[str, Any]:
    return next(line for line in load(name) if line.get(key) == value or value in json.dumps(line.get(key)))


def _strip_ids(offer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in offer.items() if k not in ("id", "framework_id", "agent_id", "url", "hostname")}


def test_static_reservation_offer_and_launch_match_trace_11(make_master):
    master = make_master(agent_resources={0: TRACE_RESOURCES})
    scheduler = RawScheduler(master.address)
    scheduler.subscribe(team_info("team-a-job", ["team-a"]))
    offer = scheduler.next_offers()[0]
    recorded = _trace("11-reservations-quota.jsonl", "note", "first OFFERS")["event"]["offers"]["offers"][0]
    assert _strip_ids(offer) == _strip_ids(recorded)

    accept = copy.deepcopy(next(line for line in load("11-reservations-quota.jsonl")
                                if line.get("dir") == "send" and line["call"]["type"] == "ACCEPT")["call"])
    accept["framework_id"] = {"value": scheduler.framework_id}
    accept["accept"]["offer_ids"] = [offer["id"]]
    task = accept["accept"]["operations"][0]["launch"]["task_infos"][0]
    task["agent_id"] = offer["agent_id"]
    task["command"]["value"] = "true"
    assert scheduler.call(accept).status == 202
    states = [scheduler.next_update(task_id="rec-a-task-1")["state"] for _ in range(3)]
    assert states == ["TASK_STARTING", "TASK_RUNNING", "TASK_FINISHED"]
    scheduler.teardown()


def test_reservations_go_only_to_their_role_and_the_pool_is_shared(make_master):
    master = make_master(agent_resources={0: TRACE_RESOURCES})
    other = RawScheduler(master.address)
    other.subscribe(team_info("team-b-job", ["team-b"], capabilities=[{"type": "MULTI_ROLE"}]))
    offer = other.next_offers()[0]
    assert offer["allocation_info"] == {"role": "team-b"}
    # Pre-refinement format for a framework without RESERVATION_REFINEMENT: role "*" only.
    assert {r["role"] for r in offer["resources"]} == {"*"}
    assert sum(r["scalar"]["value"] for r in offer["resources"] if r["name"] == "cpus") == 2.0
    team_a = RawScheduler(master.address)
    team_a.subscribe(team_info("team-a-job", ["team-a"], capabilities=[{"type": "MULTI_ROLE"}]))
    offer_a = team_a.next_offers()[0]
    assert {(r["name"], r["role"]) for r in offer_a["resources"]} == {
        ("cpus", "team-a"), ("mem", "team-a"), ("ports", "team-a")}
    other.teardown()
    team_a.teardown()


def test_acl_refuses_a_role_with_mesos_words_from_trace_09(make_master):
    master = make_master(credentials=CREDENTIALS, acls=ACLS)
    for line in load("09-authz.jsonl"):
        request = line["request"]
        body = {"type": "SUBSCRIBE", "subscribe": {"framework_info": request["framework_info"]}}
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "Authorization": basic(request["auth_principal"])}
        status, _, stream, error = open_stream(master.address, "/api/v1/scheduler", body, headers)
        assert status == line["status"], line["case"]
        expected = line["body_first_bytes"]
        if status != 200:
            assert error == expected
            continue
        first = stream.next(timeout=10, heartbeats=True)
        recorded = json.loads(expected.split("\n", 1)[1]) if first["type"] == "ERROR" else None
        if recorded is not None:
            assert first == recorded, line["case"]
            assert stream.next(timeout=10) is None, "the master closes the stream after the refusal"
        else:
            assert first["type"] == "SUBSCRIBED" and expected.split("\n", 1)[1].startswith('{"type":"SUBSCRIBED"')
        stream.close()


def test_run_tasks_acl_gives_task_unauthorized(make_master):
    acls = {"run_tasks": [{"principals": {"values": ["team-a"]}, "users": {"type": "NONE"}}]}
    master = make_master(credentials=CREDENTIALS, acls=acls)
    scheduler = RawScheduler(master.address, auth=basic("team-a"))
    scheduler.subscribe(team_info("a", ["*"], principal="team-a"))
    offer = scheduler.next_offers()[0]
    cpus = next(r for r in offer["resources"] if r["name"] == "cpus")
    task = {"name": "t", "task_id": {"value": "t1"}, "agent_id": offer["agent_id"],
            "resources": [dict(cpus, scalar={"value": 0.1})], "command": {"value": "true"}}
    scheduler.framework_call("ACCEPT", {"offer_ids": [offer["id"]],
                                        "operations": [{"type": "LAUNCH", "launch": {"task_infos": [task]}}]})
    status = scheduler.next_update(task_id="t1")
    assert (status["state"], status["reason"], status["message"]) == (
        "TASK_ERROR", "REASON_TASK_UNAUTHORIZED", "Not authorized to launch task")
    scheduler.teardown()


def test_quota_answers_match_trace_11_and_limits_cap_offers(make_master):
    master = make_master(agent_resources={0: TRACE_RESOURCES})
    recorded = [line for line in load("11-reservations-quota.jsonl") if line.get("dir") == "operator"]
    before = operator(master, {"type": "GET_QUOTA"})
    assert (before.status, before.body) == (200, recorded[0]["body"])
    update = operator(master, {"type": "UPDATE_QUOTA", "update_quota": {"force": True, "quota_configs": [
        {"role": "team-a", "guarantees": {"cpus": {"value": 1}}, "limits": {"cpus": {"value": 3}}}]}})
    assert (update.status, update.body) == (200, None)
    after = operator(master, {"type": "GET_QUOTA"})
    assert after.body == recorded[2]["body"]

    scheduler = RawScheduler(master.address)
    scheduler.subscribe(team_info("team-a-job", ["team-a"]))
    offer = scheduler.next_offers()[0]
    # 2 reserved cpus count against the limit of 3: only 1 of the 2 shared cpus is offered.
    cpus = {json.dumps(r.get("reservations")): r["scalar"]["value"] for r in offer["resources"]
            if r["name"] == "cpus"}
    assert cpus == {json.dumps([{"type": "STATIC", "role": "team-a"}]): 2.0, "null": 1.0}
    roles = operator(master, {"type": "GET_ROLES"}).body["get_roles"]["roles"]
    assert [(r["name"], r["weight"], r["frameworks"]) for r in roles] == [
        ("team-a", 1.0, [{"value": scheduler.framework_id}])]
    scheduler.teardown()


def test_dynamic_reservation_through_the_operator_api(make_master):
    master = make_master()
    agent_id = next(iter(master.agent_endpoints))
    reserved = [{"name": "cpus", "type": "SCALAR", "scalar": {"value": 1.5},
                 "reservations": [{"type": "DYNAMIC", "role": "team-b", "principal": "ops"}]}]
    reply = operator(master, {"type": "RESERVE_RESOURCES",
                              "reserve_resources": {"agent_id": {"value": agent_id}, "resources": reserved}})
    assert reply.status == 202, reply
    team_b = RawScheduler(master.address)
    team_b.subscribe(team_info("b", ["team-b"]))
    offer = team_b.next_offers()[0]
    assert [r for r in offer["resources"] if r.get("reservations")] == [
        dict(reserved[0], allocation_info={"role": "team-b"})]
    team_b.teardown()
    too_much = [dict(reserved[0], scalar={"value": 5.0})]
    reply = operator(master, {"type": "RESERVE_RESOURCES",
                              "reserve_resources": {"agent_id": {"value": agent_id}, "resources": too_much}})
    assert reply.status == 409
    reply = operator(master, {"type": "UNRESERVE_RESOURCES",
                              "unreserve_resources": {"agent_id": {"value": agent_id}, "resources": reserved}})
    assert reply.status == 202
    wait_until(lambda: master.state()["slaves"][0]["unreserved_resources"]["cpus"] == 2.0,
               message="the reservation to be gone")


def test_drf_offers_the_shared_pool_to_the_role_holding_less(make_master):
    master = make_master(weights={"a": 3.0})
    weights = operator(master, {"type": "GET_WEIGHTS"})
    assert weights.body == {"type": "GET_WEIGHTS", "get_weights": {"weight_infos": [{"weight": 3.0, "role": "a"}]}}
    team_a = RawScheduler(master.address)
    team_a.subscribe(team_info("a", ["a"], capabilities=[{"type": "MULTI_ROLE"}]))
    offer = team_a.next_offers()[0]
    cpus = next(r for r in offer["resources"] if r["name"] == "cpus")
    task = {"name": "t", "task_id": {"value": "hold"}, "agent_id": offer["agent_id"],
            "resources": [dict(cpus, scalar={"value": 1.0})], "command": {"value": "sleep 30"}}
    team_b = RawScheduler(master.address)
    team_b.subscribe(team_info("b", ["b"], capabilities=[{"type": "MULTI_ROLE"}]))
    # Role a now holds half the cpus, role b nothing: what a leaves goes to b, although a
    # subscribed first and weighs more (0.5 / 3 > 0).
    team_a.framework_call("ACCEPT", {"offer_ids": [offer["id"]], "filters": {"refuse_seconds": 0},
                                     "operations": [{"type": "LAUNCH", "launch": {"task_infos": [task]}}]})
    offer_b = team_b.next_offers()[0]
    assert offer_b["allocation_info"] == {"role": "b"}
    assert next(r for r in offer_b["resources"] if r["name"] == "cpus")["scalar"]["value"] == 1.0
    team_a.teardown()
    team_b.teardown()


def test_team_flags_are_checked_and_named():
    settings = team_settings(["0=cpus(team-a):2;cpus:2"], ["team-a=cpus:1/cpus:3"], "team-a=2", json.dumps(ACLS))
    assert settings["quotas"]["team-a"].guarantees == {"cpus": 1.0}
    assert settings["quotas"]["team-a"].limits == {"cpus": 3.0}
    assert settings["weights"] == {"team-a": 2.0}
    for args, fragment in ((["x=cpus:1"], [], "", None), "--reserve"), ((["0=cpus:abc"], [], "", None), "--reserve"), (
            ([], ["*=cpus:1"], "", None), "--quota"), (([], [], "a=0", None), "--weights"), (
            ([], [], "", '{"register_frameworks": [{"roles": {"type": "MAYBE"}}]}'), "acls"):
        with pytest.raises(ValueError, match=fragment.replace("-", r"\-")):
            team_settings(*args)


def test_a_role_below_its_quota_guarantee_is_offered_first(make_master):
    master = make_master(quotas={"guaranteed": QuotaConfig(guarantees={"cpus": 1.0})})
    other = RawScheduler(master.address)
    other.subscribe(team_info("other", ["other"]))
    offer = other.next_offers()[0]
    guaranteed = RawScheduler(master.address)
    guaranteed.subscribe(team_info("guaranteed", ["guaranteed"]))
    # Both roles hold nothing once this is declined; the one below its guarantee goes first,
    # although the other subscribed first.
    other.framework_call("DECLINE", {"offer_ids": [offer["id"]], "filters": {"refuse_seconds": 0}})
    assert guaranteed.next_offers()[0]["allocation_info"] == {"role": "guaranteed"}
    other.teardown()
    guaranteed.teardown()


def test_update_framework_into_a_refused_role_is_forbidden(make_master):
    master = make_master(credentials=CREDENTIALS, acls=ACLS)
    scheduler = RawScheduler(master.address, auth=basic("team-b"))
    info = team_info("b", ["team-b"], principal="team-b")
    scheduler.subscribe(info)
    update = {"framework_info": dict(info, roles=["team-a"], id={"value": scheduler.framework_id})}
    reply = scheduler.framework_call("UPDATE_FRAMEWORK", update)
    assert (reply.status, reply.body) == (
        403, f"Not authorized to register framework {scheduler.framework_id} with roles {{ team-a }}")
    scheduler.teardown()


def test_unmet_guarantees_are_held_back_as_headroom_from_other_roles(make_master):
    """Mesos keeps the unreserved resources nobody holds at or above the roles' unmet quota
    guarantees: another role is offered only the rest; the guaranteed role then gets its share."""
    master = make_master(agent_cpus=4.0, agent_mem=4096.0,
                         quotas={"guaranteed": QuotaConfig(guarantees={"cpus": 3.0}, limits={})})
    other = RawScheduler(master.address)
    other.subscribe(team_info("other", ["other"]))
    offer = other.next_offers()[0]
    assert offer["allocation_info"] == {"role": "other"}
    assert next(r for r in offer["resources"] if r["name"] == "cpus")["scalar"]["value"] == 1.0  # 4 - 3
    assert next(r for r in offer["resources"] if r["name"] == "mem")["scalar"]["value"] == 4096.0  # no mem guarantee
    guaranteed = RawScheduler(master.address)
    guaranteed.subscribe(team_info("guaranteed", ["guaranteed"]))
    offer_g = guaranteed.next_offers()[0]  # while `other` still holds its offer
    assert offer_g["allocation_info"] == {"role": "guaranteed"}
    assert next(r for r in offer_g["resources"] if r["name"] == "cpus")["scalar"]["value"] == 3.0
    other.teardown()
    guaranteed.teardown()


def test_credentials_are_read_in_mesos_json_form_and_the_old_lines_refused_in_its_words(tmp_path):
    from localmesos.http.auth import load_credentials

    good = tmp_path / "credentials.json"
    good.write_text(json.dumps({"credentials": [{"principal": "a", "secret": "secret-a"}]}))
    assert load_credentials(good) == {"a": "secret-a"}
    old = tmp_path / "credentials.txt"
    old.write_text("a secret-a\n")
    # What mesos-master 1.12 printed for this file (tests/e2e/test_teams_real_mesos.py, 2026-11-24),
    # "... at line 1 near: a secret-a (see --credentials flag)", without the secret it quoted.
    with pytest.raises(ValueError, match=r"^Invalid json format: syntax error at line 1, column 1 "
                                         r"\(see --credentials flag\)$") as refused:
        load_credentials(old)
    assert "secret-a" not in str(refused.value)
