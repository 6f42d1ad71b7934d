"""ACCEPT validation outcomes and HTTP-level refusals beyond trace 04."""
from __future__ import annotations

from tests.localmesos.scheduler_client import (
    JSON_HEADERS, RawScheduler, command_task, framework_info, http_call, launch, scalar, wait_until)


def test_task_validation_messages(make_master):
    master = make_master()
    scheduler = RawScheduler(master.address)
    scheduler.subscribe(framework_info("validation"))
    offer = scheduler.next_offers()[0]
    agent_id = offer["agent_id"]["value"]
    both = command_task("both", agent_id, "true")
    both["executor"] = {"executor_id": {"value": "e"}, "command": {"value": "true"}}
    neither = command_task("neither", agent_id, "true")
    del neither["command"]
    tasks = [
        both,
        neither,
        command_task("nothing", agent_id, "true", resources=[]),
        command_task("bad/id", agent_id, "true"),
        command_task("elsewhere", "some-other-agent", "true"),
        command_task("negative", agent_id, "true", resources=[scalar("cpus", -1)]),
        command_task("kill-policy", agent_id, "true", kill_policy={"grace_period": {"nanoseconds": -1}}),
    ]
    assert launch(scheduler, offer, tasks, refuse_seconds=0).status == 202
    errors = {}
    while len(errors) < len(tasks):
        status = scheduler.next_update(ack=False)
        assert (status["state"], status["reason"], status["source"]) == (
            "TASK_ERROR", "REASON_TASK_INVALID", "SOURCE_MASTER")
        assert "uuid" not in status and "executor_id" not in status
        errors[status["task_id"]["value"]] = status["message"]
    assert errors == {
        "both": "Task should have at least one (but not both) of CommandInfo or ExecutorInfo present",
        "neither": "Task should have at least one (but not both) of CommandInfo or ExecutorInfo present",
        "nothing": "Task uses no resources",
        "bad/id": "Task has an invalid TaskID: 'bad/id' contains invalid characters",
        "elsewhere": f"Task uses invalid agent some-other-agent while agent {agent_id} is expected",
        "negative": "Task uses invalid resources: Invalid resources: Invalid scalar resource: value <= 0",
        "kill-policy": "Task's 'kill_policy.grace_period' must be non-negative",
    }
    scheduler.teardown()
    scheduler.close()


def test_offer_validation_messages(make_master):
    master = make_master(agents=2)
    first = RawScheduler(master.address)
    first.subscribe(framework_info("first"))
    offers = first.next_offers()
    second = RawScheduler(master.address)
    second.subscribe(framework_info("second"))
    agent_id = offers[0]["agent_id"]["value"]

    def accept(scheduler: RawScheduler, offer_ids: list, task_id: str) -> dict:
        task = command_task(task_id, agent_id, "true")
        assert scheduler.framework_call("ACCEPT", {"offer_ids": offer_ids, "operations": [
            {"type": "LAUNCH", "launch": {"task_infos": [task]}}]}).status == 202
        status = scheduler.next_update(ack=False)
        assert (status["state"], status["reason"]) == ("TASK_LOST", "REASON_INVALID_OFFERS")
        return status

    foreign = accept(second, [offers[0]["id"]], "foreign")
    assert foreign["message"] == (f"Task launched with invalid offers: Offer {offers[0]['id']['value']} has invalid "
                                  f"framework {first.framework_id} while framework {second.framework_id} is expected")
    duplicate = accept(first, [offers[1]["id"], offers[1]["id"]], "duplicate")
    assert duplicate["message"] == \
        f"Task launched with invalid offers: Duplicate offer {offers[1]['id']['value']} in offer list"
    # Invalid offers are discarded (without a filter) and offered again in a later round.
    def offered_agents() -> set:
        state = master.state()
        return {o["slave_id"] for f in state["frameworks"] for o in f["offers"]}

    wait_until(lambda: offered_agents() == {o["agent_id"]["value"] for o in offers}, message="re-offers")
    for scheduler in (first, second):
        scheduler.teardown()
        scheduler.close()


def test_http_level_refusals(make_master):
    master = make_master()
    reply = http_call(master.address, "GET", "/api/v1/scheduler")
    assert (reply.status, reply.headers["Allow"], reply.body) == (
        405, "POST", "405 Method Not Allowed. Expecting one of { 'POST' }, but received 'GET'.")
    body = {"type": "SUBSCRIBE", "subscribe": {"framework_info": {"user": "u", "name": "n"}}}
    reply = http_call(master.address, "POST", "/api/v1/scheduler", body, {**JSON_HEADERS, "Mesos-Stream-Id": "x"})
    assert (reply.status, reply.body) == (400, "Subscribe calls should not include the 'Mesos-Stream-Id' header")
    missing_user = {"type": "SUBSCRIBE", "subscribe": {"framework_info": {"name": "n"}}}
    reply = http_call(master.address, "POST", "/api/v1/scheduler", missing_user, JSON_HEADERS)
    assert (reply.status, reply.body) == (400, "Failed to convert JSON into Call protobuf: Missing required fields: "
                                               "subscribe.framework_info.user")
    reply = http_call(master.address, "POST", "/api/v1/scheduler", body, {"Accept": "application/json"})
    assert (reply.status, reply.body) == (400, "Expecting 'Content-Type' to be present")
    mismatch = {"type": "SUBSCRIBE", "framework_id": {"value": "a"},
                "subscribe": {"framework_info": {"user": "u", "name": "n", "id": {"value": "b"}}}}
    reply = http_call(master.address, "POST", "/api/v1/scheduler", mismatch, JSON_HEADERS)
    assert (reply.status, reply.body) == (
        400, "Failed to validate scheduler::Call: 'framework_id' differs from 'subscribe.framework_info.id'")
    assert http_call(master.address, "GET", "/no/such/endpoint").status == 404
