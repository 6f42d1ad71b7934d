"""Planned change beyond what traces 13-17 recorded, as Mesos 1.12's source has it: a drain with
``mark_gone``, a drain of an unreachable agent told when it comes back, inverse offers to a framework
that only holds an offer there, and the maintenance schedule's refusals. (The recorded scenarios
are replayed in tests/localmesos/http/test_trace_planned_change.py.)"""
from __future__ import annotations

from typing import Any

import pytest

from localmesos import LocalMaster, Tuning
from localmesos.config import MasterConfig
from tests.localmesos.scheduler_client import RawScheduler, command_task, framework_info, http_call, launch

OPERATOR = {"Content-Type": "application/json", "Accept": "application/json"}


def operator(master: LocalMaster, body: dict[str, Any]) -> Any:
    return http_call(master.address, "POST", "/api/v1", body, OPERATOR)


def agents(master: LocalMaster) -> dict[str, dict[str, Any]]:
    reply = operator(master, {"type": "GET_AGENTS"})
    return {a["agent_info"]["id"]["value"]: a for a in reply.body["get_agents"]["agents"]}


def drain(master: LocalMaster, agent_id: str, **extra: Any) -> Any:
    return operator(master, {"type": "DRAIN_AGENT", "drain_agent": {"agent_id": {"value": agent_id}, **extra}})


def running(master: LocalMaster, capabilities: list[str]) -> tuple[RawScheduler, str]:
    """A framework with ``sleep 600`` running on agent 0; (scheduler, agent 0's id)."""
    scheduler = RawScheduler(master.address)
    info = framework_info("planned")
    info["capabilities"] = info["capabilities"] + [{"type": c} for c in capabilities]
    scheduler.subscribe(info)
    agent_id = next(iter(master.agent_endpoints))
    offer = next(o for o in scheduler.next_offers() if o["agent_id"]["value"] == agent_id)
    assert launch(scheduler, offer, [command_task("sleeper", agent_id, "sleep 600")], refuse_seconds=0).status == 202
    while scheduler.next_update(task_id="sleeper")["state"] != "TASK_RUNNING":
        pass
    return scheduler, agent_id


def test_a_drain_with_mark_gone_ends_with_the_agent_gone(make_master):
    """slave.cpp Slave::statusUpdate: with mark_gone, a PARTITION_AWARE framework's killed task is
    TASK_GONE_BY_OPERATOR (so would its TASK_KILLING be); master.cpp checkAndTransitionDrainingAgent:
    drained, the agent is marked gone instead of DRAINED."""
    master = make_master(agents=2)
    scheduler, agent_id = running(master, ["PARTITION_AWARE"])
    assert drain(master, agent_id, max_grace_period={"seconds": 2}, mark_gone=True).status == 200
    assert agents(master)[agent_id]["drain_info"] == {
        "state": "DRAINING", "config": {"max_grace_period": {"nanoseconds": 2_000_000_000}, "mark_gone": True}}
    gone = scheduler.next_update(task_id="sleeper")
    assert (gone["state"], gone["reason"], gone["source"]) == (
        "TASK_GONE_BY_OPERATOR", "REASON_AGENT_DRAINING", "SOURCE_EXECUTOR")
    failure = scheduler.stream.wait_for(lambda e: e["type"] == "FAILURE" and "executor_id" not in e["failure"])
    assert failure["failure"]["agent_id"]["value"] == agent_id
    assert agent_id not in agents(master)
    assert scheduler.framework_call("RECONCILE", {"tasks": [
        {"task_id": {"value": "sleeper"}, "agent_id": {"value": agent_id}}]}).status == 202
    answer = scheduler.next_update(ack=False)
    assert (answer["state"], answer["message"]) == ("TASK_GONE_BY_OPERATOR", "Reconciliation: Task is gone")
    scheduler.teardown()
    scheduler.close()


def test_an_unreachable_agent_drained_meanwhile_drains_when_it_is_back(make_master):
    """http.cpp _drainAgent takes an unreachable agent; master.cpp resends the drain when it
    re-registers, and it stays deactivated."""
    master = make_master(agents=2, tuning=Tuning(stop_grace_period=1.0, agent_ping_timeout=0.2,
                                                 max_agent_ping_timeouts=3))
    scheduler, agent_id = running(master, [])
    master.pause_agent(0)
    assert scheduler.next_update(task_id="sleeper", timeout=5)["state"] == "TASK_LOST"
    assert drain(master, agent_id, max_grace_period={"seconds": 1}).status == 200
    master.resume_agent(0)
    back = scheduler.next_update(task_id="sleeper", timeout=5)
    assert (back["state"], back["reason"]) == ("TASK_RUNNING", "REASON_AGENT_REREGISTERED")
    killed = scheduler.next_update(task_id="sleeper", timeout=10)
    assert (killed["state"], killed["reason"]) == ("TASK_KILLED", "REASON_AGENT_DRAINING")
    entry = agents(master)[agent_id]
    assert (entry["active"], entry["deactivated"], entry["drain_info"]["state"]) == (False, True, "DRAINED")
    scheduler.teardown()
    scheduler.close()


def test_inverse_offers_go_to_a_framework_that_only_holds_an_offer(make_master):
    """generateInverseOffers: frameworks with resources offered *or* allocated on the agent."""
    master = make_master(agents=1)
    scheduler = RawScheduler(master.address)
    scheduler.subscribe(framework_info("holder"))
    (offer,) = scheduler.next_offers()
    window = {"machine_ids": [{"hostname": "127.0.0.1", "ip": "127.0.0.1"}],
              "unavailability": {"start": {"nanoseconds": 1}}}
    reply = http_call(master.address, "POST", "/maintenance/schedule", {"windows": [window]},
                      {"Content-Type": "application/json"})
    assert (reply.status, reply.body) == (200, None)
    rescind = scheduler.stream.wait_for(lambda e: e["type"] == "RESCIND")
    assert rescind["rescind"]["offer_id"] == offer["id"]
    inverse = scheduler.stream.wait_for(lambda e: e["type"] == "INVERSE_OFFERS")
    (entry,) = inverse["inverse_offers"]["inverse_offers"]
    assert entry["unavailability"] == {"start": {"nanoseconds": 1}}
    offered = [e for e in scheduler.stream.received if e["type"] == "OFFERS"][1]  # came before it
    assert offered["offers"]["offers"][0]["unavailability"] == {"start": {"nanoseconds": 1}}
    scheduler.teardown()
    scheduler.close()


@pytest.mark.parametrize("body,refusal", [
    ({"windows": [{"machine_ids": [{"hostname": "a", "ip": "10.0.0.1"}, {"hostname": "A", "ip": "10.0.0.1"}],
                   "unavailability": {"start": {"nanoseconds": 1}}}]},
     """Machine '{"hostname":"A","ip":"10.0.0.1"}' appears more than once in the schedule"""),
    ({"windows": [{"machine_ids": [{"hostname": "a"}],
                   "unavailability": {"start": {"nanoseconds": 1}, "duration": {"nanoseconds": -1}}}]},
     "Unavailability 'duration' is negative"),
    ({"windows": [{"machine_ids": [{"hostname": ""}], "unavailability": {"start": {"nanoseconds": 1}}}]},
     "Both 'hostname' and 'ip' for a machine are empty"),
    ({"windows": [{"machine_ids": [{"ip": "10.0.0"}], "unavailability": {"start": {"nanoseconds": 1}}}]},
     "Failed to parse IP '10.0.0': not an IPv4 address"),
    ({"windows": [{"machine_ids": [{"ip": "10.0.0.1"}]}]}, "Missing required fields: windows[0].unavailability"),
])
def test_a_bad_schedule_is_refused_with_its_reason(make_master, body, refusal):
    master = make_master()
    reply = http_call(master.address, "POST", "/maintenance/schedule", body, {"Content-Type": "application/json"})
    assert (reply.status, reply.body) == (400, refusal)
    assert http_call(master.address, "GET", "/maintenance/schedule").body == {}


def test_machine_per_agent_needs_the_loopback_host():
    with pytest.raises(ValueError, match="machine_per_agent: needs host 127.0.0.1"):
        MasterConfig(host="0.0.0.0", machine_per_agent=True)
    assert [MasterConfig(machine_per_agent=True).agent_host(i) for i in (0, 1)] == ["127.0.0.2", "127.0.0.3"]
    assert MasterConfig().agent_host(1) == "127.0.0.1"
