"""Allocator behaviour: agents, ports, GPUs, roles, scale."""
from __future__ import annotations

import time

import pytest

from tests.localmesos.scheduler_client import RawScheduler, command_task, framework_info, launch, scalar, wait_until

from localmesos import LocalMaster


def offer_resources(offer: dict) -> dict:
    out = {}
    for resource in offer["resources"]:
        if resource["type"] == "SCALAR":
            out[resource["name"]] = resource["scalar"]["value"]
        else:
            out[resource["name"]] = [(r["begin"], r["end"]) for r in resource["ranges"]["range"]]
    return out


def test_each_agent_gets_a_disjoint_port_range_and_endpoint(make_master):
    master = make_master(agents=3, ports_per_agent=100, agent_cpus=1, agent_mem=1024, agent_disk=100)
    scheduler = RawScheduler(master.address)
    scheduler.subscribe(framework_info("ports"))
    offers = scheduler.next_offers()
    assert len(offers) == 3
    ranges = sorted(offer_resources(o)["ports"][0] for o in offers)
    assert ranges == [(31000, 31099), (31100, 31199), (31200, 31299)]
    endpoints = set(master.agent_endpoints.values())
    assert len(endpoints) == 3
    agent_ports = {int(e.rsplit(":", 1)[1]) for e in endpoints}
    assert not any(31000 <= p <= 31299 for p in agent_ports), "agent sockets stay out of offered ports"
    assert {o["url"]["address"]["port"] for o in offers} == agent_ports
    for offer in offers:
        assert [r["name"] for r in offer["resources"]] == ["ports", "cpus", "mem", "disk"]
        assert "attributes" not in offer
    scheduler.teardown()
    scheduler.close()


def test_gpu_agents_are_offered_only_to_gpu_capable_frameworks(make_master):
    master = make_master(agents=1, gpus_per_agent=2, allocation_interval=0.2)
    plain = RawScheduler(master.address)
    plain.subscribe({"user": "u", "name": "no-gpu", "failover_timeout": 10.0})
    assert plain.stream is not None
    plain.stream.expect_silence(1.0)

    gpu = RawScheduler(master.address)
    gpu.subscribe(framework_info("gpu"))
    offer = gpu.next_offers()[0]
    assert [r["name"] for r in offer["resources"]] == ["ports", "cpus", "mem", "disk", "gpus"]
    assert offer_resources(offer)["gpus"] == 2.0
    agent_id = offer["agent_id"]["value"]
    tasks = [
        command_task("one-gpu", agent_id, 'echo "[$CUDA_VISIBLE_DEVICES|$NVIDIA_VISIBLE_DEVICES]"',
                     resources=[scalar("cpus", 0.1), scalar("mem", 32), scalar("gpus", 1)]),
        command_task("no-gpu", agent_id, 'echo "[$CUDA_VISIBLE_DEVICES]"'),
        command_task("half-gpu", agent_id, "true",
                     resources=[scalar("cpus", 0.1), scalar("mem", 32), scalar("gpus", 0.5)]),
    ]
    assert launch(gpu, offer, tasks, refuse_seconds=0).status == 202
    finished = {}
    while len(finished) < 3:
        status = gpu.next_update()
        if status["state"] in ("TASK_FINISHED", "TASK_ERROR", "TASK_FAILED"):
            finished[status["task_id"]["value"]] = status
    assert finished["half-gpu"]["state"] == "TASK_ERROR"
    assert finished["half-gpu"]["message"] == \
        "Task uses invalid resources: Invalid 'gpus' resource: The 'gpus' resource must be an unsigned integer"
    assert finished["one-gpu"]["state"] == finished["no-gpu"]["state"] == "TASK_FINISHED"
    stdout = {p.parts[-3]: (p / "stdout").read_text()
              for p in master.work_dir.glob("agents/*/frameworks/*/executors/*/runs/latest")}
    assert stdout["one-gpu"] == "[0|0]\n"
    assert stdout["no-gpu"] == "[]\n"
    plain.stream.expect_silence(0.3)
    for scheduler in (plain, gpu):
        scheduler.teardown()
        scheduler.close()


def test_agents_on_one_host_hand_out_different_gpu_devices(make_master):
    """The embedded agents share the host's GPUs: agent 1's devices come after agent 0's (each
    numbered from 0 put a task of each agent on the same card)."""
    master = make_master(agents=3, gpus_per_agent=1, agent_resources={2: "gpus:2"}, allocation_interval=0.2)
    gpu = RawScheduler(master.address)
    gpu.subscribe(framework_info("gpu"))
    offers = gpu.next_offers()
    assert sorted(offer_resources(o)["gpus"] for o in offers) == [1.0, 1.0, 2.0]
    for offer in offers:
        agent_id = offer["agent_id"]["value"]
        wanted = offer_resources(offer)["gpus"]
        task = command_task(f"gpu-{agent_id.rsplit('-S', 1)[1]}", agent_id, 'echo "[$CUDA_VISIBLE_DEVICES]"',
                            resources=[scalar("cpus", 0.1), scalar("mem", 32), scalar("gpus", wanted)])
        assert launch(gpu, offer, [task], refuse_seconds=0).status == 202
    finished = set()
    while len(finished) < 3:
        status = gpu.next_update()
        assert status["state"] in ("TASK_STARTING", "TASK_RUNNING", "TASK_FINISHED"), status
        if status["state"] == "TASK_FINISHED":
            finished.add(status["task_id"]["value"])
    stdout = {p.parts[-3]: (p / "stdout").read_text()
              for p in master.work_dir.glob("agents/*/frameworks/*/executors/*/runs/latest")}
    assert stdout == {"gpu-0": "[0]\n", "gpu-1": "[1]\n", "gpu-2": "[2,3]\n"}
    gpu.teardown()
    gpu.close()


def test_multi_role_offers_carry_the_allocation_role(make_master):
    master = make_master()
    scheduler = RawScheduler(master.address)
    scheduler.subscribe(framework_info("roles", roles=["ml"]))
    offer = scheduler.next_offers()[0]
    assert offer["allocation_info"] == {"role": "ml"}
    assert {r["role"] for r in offer["resources"]} == {"*"}
    assert {r["allocation_info"]["role"] for r in offer["resources"]} == {"ml"}
    state = master.state()
    assert state["frameworks"][0]["roles"] == ["ml"]
    scheduler.teardown()
    scheduler.close()

    refused = RawScheduler(master.address)
    error = refused.subscribe(framework_info("bad-role", roles=["ml", "ml"]), expect_subscribed=False)
    assert error == {"type": "ERROR", "error": {"message": "'FrameworkInfo.roles' contains duplicate items: { ml }"}}
    assert refused.stream is not None and refused.stream.next(timeout=5) is None
    refused.close()


def test_decline_filter_is_per_framework(make_master):
    master = make_master(allocation_interval=0.2)
    first = RawScheduler(master.address)
    first.subscribe(framework_info("first"))
    offer = first.next_offers()[0]
    second = RawScheduler(master.address)
    second.subscribe(framework_info("second"))
    declined = time.monotonic()
    assert first.framework_call("DECLINE", {"offer_ids": [offer["id"]],
                                            "filters": {"refuse_seconds": 30}}).status == 202
    second.next_offers(timeout=2)
    assert time.monotonic() - declined < 1.0, "other frameworks are not filtered"
    assert first.stream is not None
    first.stream.expect_silence(0.6)
    for scheduler in (first, second):
        scheduler.teardown()
        scheduler.close()


@pytest.mark.serial("times an allocation round over 1,000 agents against 50 ms")
def test_a_thousand_agents_allocate_in_milliseconds(tmp_path):
    with LocalMaster(agents=1000, agent_cpus=1.0, agent_mem=1024.0, agent_disk=100.0, work_dir=tmp_path / "w",
                     allocation_interval=0.2) as master:
        scheduler = RawScheduler(master.address)
        scheduler.subscribe(framework_info("big"))
        offers = scheduler.next_offers(timeout=30)
        assert len(offers) == 1000
        ranges = sorted(offer_resources(o)["ports"][0] for o in offers)
        assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:])), "port ranges are disjoint"
        assert ranges[-1][1] <= 65535
        allocator = master._master.allocator  # internal: measures rounds without HTTP noise
        rounds = allocator.rounds
        wait_until(lambda: allocator.rounds >= rounds + 3, timeout=5, message="idle allocation rounds")
        assert allocator.last_round_seconds < 0.05, allocator.last_round_seconds

        # Everything is offered; declining one offer re-offers just that agent quickly.
        declined = time.monotonic()
        assert scheduler.framework_call("DECLINE", {"offer_ids": [offers[0]["id"]],
                                                    "filters": {"refuse_seconds": 0}}).status == 202
        again = scheduler.next_offers(timeout=5)
        assert [o["agent_id"] for o in again] == [offers[0]["agent_id"]]
        assert time.monotonic() - declined < 1.0
        scheduler.teardown()
        scheduler.close()


def test_update_framework_changes_roles_and_rescinds_offers_of_dropped_roles(make_master):
    master = make_master()
    scheduler = RawScheduler(master.address)
    info = framework_info("update", roles=["a"])
    scheduler.subscribe(info)
    offer = scheduler.next_offers()[0]
    assert offer["allocation_info"] == {"role": "a"}
    new_info = {**info, "roles": ["b"], "id": {"value": scheduler.framework_id}}
    reply = scheduler.framework_call("UPDATE_FRAMEWORK", {"framework_info": new_info})
    assert (reply.status, reply.headers.get("Content-Length"), reply.body) == (200, "0", None)
    assert scheduler.stream is not None
    rescind = scheduler.stream.wait_for(lambda e: e["type"] == "RESCIND")
    assert rescind["rescind"]["offer_id"] == offer["id"]
    assert scheduler.next_offers()[0]["allocation_info"] == {"role": "b"}
    bad = scheduler.framework_call("UPDATE_FRAMEWORK", {"framework_info": {**new_info, "user": "someone-else"}})
    assert (bad.status, bad.body) == (400, "Updating 'FrameworkInfo.user' is unsupported; attempted to update "
                                           "from 'root' to 'someone-else'")
    assert master.state()["frameworks"][0]["roles"] == ["b"]
    scheduler.teardown()
    scheduler.close()
