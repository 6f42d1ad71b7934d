"""Framework failover/removal, agent loss, executors, kills, fetcher, auth."""
from __future__ import annotations

import base64
import io
import sys
import tarfile
import uuid
from pathlib import Path

import pytest

from tests.localmesos.sandbox_procs import assert_no_processes, processes_under
from tests.localmesos.scheduler_client import (
    JSON_HEADERS, RawScheduler, command_task, framework_info, http_call, launch, scalar, wait_until)

from localmesos import LocalMaster, Tuning


def running_task(master: LocalMaster, scheduler: RawScheduler, task_id: str = "sleeper",
                 command: str = "sleep 60", **extra) -> dict:
    offer = scheduler.next_offers()[0]
    task = command_task(task_id, offer["agent_id"]["value"], command, **extra)
    assert launch(scheduler, offer, [task], refuse_seconds=0).status == 202
    while True:
        status = scheduler.next_update(task_id=task_id)
        if status["state"] == "TASK_RUNNING":
            return offer


def test_failover_timeout_expiry_removes_the_framework_and_kills_its_tasks(make_master):
    master = make_master()
    scheduler = RawScheduler(master.address)
    scheduler.subscribe(framework_info("short-failover", failover_timeout=0.5))
    running_task(master, scheduler)
    assert processes_under(master.work_dir)

    scheduler.close()  # the connection drops: disconnected, offers gone, failover timer running
    state = wait_until(lambda: (lambda s: s if not s["frameworks"][0]["connected"] else None)(master.state()),
                       timeout=5, message="disconnect")
    framework = state["frameworks"][0]
    assert (framework["active"], framework["offers"]) == (False, [])
    assert framework["unregistered_time"] > 0 and framework["tasks"][0]["state"] == "TASK_RUNNING"
    assert state["slaves"][0]["offered_resources"]["cpus"] == 0.0

    state = wait_until(lambda: (lambda s: s if s["completed_frameworks"] else None)(master.state()),
                       timeout=5, message="framework removal")
    assert state["frameworks"] == []
    (task,) = state["completed_frameworks"][0]["completed_tasks"]
    assert task["state"] == "TASK_KILLED"
    assert_no_processes(master.work_dir)

    again = RawScheduler(master.address)
    error = again.subscribe(framework_info("short-failover"), framework_id=scheduler.framework_id,
                            expect_subscribed=False)
    assert error == {"type": "ERROR", "error": {"message": "Framework has been removed"}}
    assert again.stream is not None and again.stream.next(timeout=5) is None
    again.close()


def test_calls_from_a_disconnected_framework_are_forbidden(make_master):
    master = make_master()
    scheduler = RawScheduler(master.address)
    scheduler.subscribe(framework_info("gone"))
    scheduler.close()
    wait_until(lambda: not master.state()["frameworks"][0]["connected"], message="disconnect")
    reply = scheduler.framework_call("REVIVE")
    assert (reply.status, reply.body) == (403, "Framework is not subscribed")


@pytest.mark.parametrize("partition_aware", [False, True])
def test_mark_agent_gone(make_master, partition_aware):
    master = make_master(agents=2, allocation_interval=0.2)
    info = framework_info("chaos")
    if partition_aware:
        info["capabilities"] = info["capabilities"] + [{"type": "PARTITION_AWARE"}]
    scheduler = RawScheduler(master.address)
    scheduler.subscribe(info)
    offers = scheduler.next_offers()
    offers_event = next(e for e in scheduler.stream.received if e["type"] == "OFFERS")
    victim = offers[0]["agent_id"]["value"]
    survivor = offers[1]["agent_id"]["value"]
    task = command_task("doomed", victim, "sleep 60")
    assert launch(scheduler, offers[0], [task], refuse_seconds=0).status == 202
    scheduler.next_update(task_id="doomed")
    scheduler.next_update(task_id="doomed")
    assert scheduler.stream is not None
    # Looked for among everything received: it may come before the updates that were waited for.
    leftover = wait_until(lambda: next((e for e in list(scheduler.stream.received) if e["type"] == "OFFERS"
                                        and e is not offers_event
                                        and e["offers"]["offers"][0]["agent_id"]["value"] == victim), None),
                          message="the victim's leftover offered again")
    assert processes_under(master.work_dir)

    body = {"type": "MARK_AGENT_GONE", "mark_agent_gone": {"agent_id": {"value": victim}}}
    reply = http_call(master.address, "POST", "/api/v1", body, {"Content-Type": "application/json"})
    assert (reply.status, reply.headers.get("Content-Length"), reply.body) == (200, "0", None)

    status = scheduler.next_update(ack=False, task_id="doomed")
    expected_state = "TASK_GONE_BY_OPERATOR" if partition_aware else "TASK_LOST"
    expected_reason = "REASON_AGENT_REMOVED_BY_OPERATOR" if partition_aware else "REASON_AGENT_REMOVED"
    assert (status["state"], status["reason"], status["source"], status["message"]) == \
        (expected_state, expected_reason, "SOURCE_MASTER", "Agent has been marked gone")
    assert "uuid" not in status and status["agent_id"] == {"value": victim}
    rescind = scheduler.stream.wait_for(lambda e: e["type"] == "RESCIND")
    assert rescind["rescind"]["offer_id"] == leftover["offers"]["offers"][0]["id"]
    failure = scheduler.stream.wait_for(lambda e: e["type"] == "FAILURE")
    assert failure == {"type": "FAILURE", "failure": {"agent_id": {"value": victim}}}
    assert_no_processes(master.work_dir)

    state = master.state()
    assert [s["id"] for s in state["slaves"]] == [survivor]
    assert state["frameworks"][0]["completed_tasks"][0]["state"] == expected_state
    assert scheduler.framework_call("RECONCILE", {"tasks": [
        {"task_id": {"value": "doomed"}, "agent_id": {"value": victim}}]}).status == 202
    answer = scheduler.next_update(ack=False)
    assert (answer["state"], answer["message"]) == (
        "TASK_GONE_BY_OPERATOR" if partition_aware else "TASK_LOST", "Reconciliation: Task is gone")

    again = http_call(master.address, "POST", "/api/v1", body, {"Content-Type": "application/json"})
    assert again.status == 200
    unknown = http_call(master.address, "POST", "/api/v1",
                        {"type": "MARK_AGENT_GONE", "mark_agent_gone": {"agent_id": {"value": "nope"}}},
                        {"Content-Type": "application/json"})
    assert (unknown.status, unknown.body) == (404, "Agent 'nope' not found")
    scheduler.teardown()
    scheduler.close()


def custom_executor_task(agent_id: str, command: str, task_id: str = "task") -> dict:
    return {"name": task_id, "task_id": {"value": task_id}, "agent_id": {"value": agent_id},
            "resources": [scalar("cpus", 0.1), scalar("mem", 32)],
            "executor": {"executor_id": {"value": "exec"}, "command": {"value": command},
                         "resources": [scalar("cpus", 0.1), scalar("mem", 32)]}}


def test_executor_registration_timeout(make_master):
    master = make_master(tuning=Tuning(executor_registration_timeout=0.5, stop_grace_period=1.0))
    scheduler = RawScheduler(master.address)
    scheduler.subscribe(framework_info("no-register"))
    offer = scheduler.next_offers()[0]
    launch(scheduler, offer, [custom_executor_task(offer["agent_id"]["value"], "sleep 60")])
    status = scheduler.next_update(timeout=5)
    assert (status["state"], status["reason"], status["source"], status["message"]) == (
        "TASK_FAILED", "REASON_EXECUTOR_REGISTRATION_TIMEOUT", "SOURCE_AGENT",
        "Executor did not register within 500ms")
    assert "uuid" in status and status["executor_id"] == {"value": "exec"}
    assert scheduler.stream is not None
    failure = scheduler.stream.wait_for(lambda e: e["type"] == "FAILURE")
    assert failure["failure"]["executor_id"] == {"value": "exec"}
    assert failure["failure"]["status"] == 9  # wait status of a SIGKILLed process
    assert_no_processes(master.work_dir)
    scheduler.teardown()
    scheduler.close()


def test_executor_exit_fails_its_tasks_and_reports_failure(make_master):
    master = make_master()
    scheduler = RawScheduler(master.address)
    scheduler.subscribe(framework_info("dying-executor"))
    offer = scheduler.next_offers()[0]
    launch(scheduler, offer, [custom_executor_task(offer["agent_id"]["value"], "exit 3")])
    status = scheduler.next_update(timeout=5)
    assert (status["state"], status["reason"], status["source"], status["message"]) == (
        "TASK_FAILED", "REASON_EXECUTOR_TERMINATED", "SOURCE_AGENT", "Executor terminated")
    assert scheduler.stream is not None
    failure = scheduler.stream.wait_for(lambda e: e["type"] == "FAILURE")
    assert failure["failure"]["status"] == 3 << 8
    # Resources of the executor and its task are free again.
    wait_until(lambda: master.state()["slaves"][0]["used_resources"]["cpus"] == 0.0, message="resources freed")
    scheduler.teardown()
    scheduler.close()


def test_kill_escalates_to_sigkill_after_the_grace_period(make_master):
    master = make_master()
    scheduler = RawScheduler(master.address)
    scheduler.subscribe(framework_info("stubborn", capabilities=[{"type": "MULTI_ROLE"},
                                                                 {"type": "TASK_KILLING_STATE"}]))
    running_task(master, scheduler, "stubborn", "trap '' TERM; touch trapped; sleep 60",
                 kill_policy={"grace_period": {"nanoseconds": 300_000_000}})
    wait_until(lambda: list(master.work_dir.glob("agents/*/frameworks/*/executors/stubborn/runs/latest/trapped")),
               message="the task to ignore SIGTERM")
    assert scheduler.framework_call("KILL", {"task_id": {"value": "stubborn"}}).status == 202
    killing = scheduler.next_update()
    assert killing["state"] == "TASK_KILLING", "TASK_KILLING_STATE frameworks see TASK_KILLING first"
    killed = scheduler.next_update(timeout=5)
    assert (killed["state"], killed["message"]) == ("TASK_KILLED", "Command terminated with signal Killed")
    assert killed["timestamp"] - killing["timestamp"] >= 0.29
    assert_no_processes(master.work_dir)
    scheduler.teardown()
    scheduler.close()


def test_fetcher_copies_extracts_and_marks_executable(make_master, tmp_path):
    master = make_master()
    script = tmp_path / "hello.sh"
    script.write_text("#!/bin/sh\necho from-script\n")
    archive = tmp_path / "bundle.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        data = b"from-archive\n"
        member = tarfile.TarInfo("bundle/data.txt")
        member.size = len(data)
        tar.addfile(member, io.BytesIO(data))
    scheduler = RawScheduler(master.address)
    scheduler.subscribe(framework_info("fetch"))
    offer = scheduler.next_offers()[0]
    agent_id = offer["agent_id"]["value"]
    good = command_task("good", agent_id, "./hello.sh && cat bundle/data.txt")
    good["command"]["uris"] = [{"value": str(script), "executable": True}, {"value": f"file://{archive}"}]
    bad = command_task("bad", agent_id, "true")
    bad["command"]["uris"] = [{"value": str(tmp_path / "missing.tgz")}]
    launch(scheduler, offer, [good, bad], refuse_seconds=0)
    seen: dict[str, list] = {}
    while seen.get("good", [{}])[-1].get("state") != "TASK_FINISHED" or "bad" not in seen:
        status = scheduler.next_update()
        seen.setdefault(status["task_id"]["value"], []).append(status)
    (failed,) = seen["bad"]
    assert (failed["state"], failed["reason"], failed["source"]) == (
        "TASK_FAILED", "REASON_CONTAINER_LAUNCH_FAILED", "SOURCE_AGENT")
    assert failed["message"].startswith("Failed to launch container: ")
    sandbox = next(master.work_dir.glob("agents/*/frameworks/*/executors/good/runs/latest"))
    assert (sandbox / "stdout").read_text() == "from-script\nfrom-archive\n"
    assert (sandbox / "bundle.tar.gz").exists()
    scheduler.teardown()
    scheduler.close()


def test_container_image_runs_on_the_host_with_a_note(make_master):
    master = make_master()
    scheduler = RawScheduler(master.address)
    scheduler.subscribe(framework_info("image"))
    offer = scheduler.next_offers()[0]
    task = command_task("imaged", offer["agent_id"]["value"], "echo ran")
    task["container"] = {"type": "MESOS", "mesos": {"image": {"type": "DOCKER",
                                                              "docker": {"name": "tfmesos/tfmesos"}}}}
    launch(scheduler, offer, [task])
    states = [scheduler.next_update()["state"] for _ in range(3)]
    assert states == ["TASK_STARTING", "TASK_RUNNING", "TASK_FINISHED"]
    sandbox = next(master.work_dir.glob("agents/*/frameworks/*/executors/imaged/runs/latest"))
    notes = (sandbox / "stderr").read_text().splitlines()
    assert notes == ["[embedded agent] no container runtime: image 'tfmesos/tfmesos' ignored, running on the host"]
    assert master.state()["frameworks"][0]["completed_tasks"][0]["container"]["type"] == "MESOS"
    scheduler.teardown()
    scheduler.close()


def test_stop_kills_processes_that_left_the_process_group(tmp_path):
    work_dir = tmp_path / "w"
    master = LocalMaster(agents=1, work_dir=work_dir, tuning=Tuning(stop_grace_period=0.5)).start()
    try:
        scheduler = RawScheduler(master.address)
        scheduler.subscribe(framework_info("escapee"))
        running_task(master, scheduler, "escapee", "setsid sleep 60 & sleep 60")
        wait_until(lambda: len(processes_under(work_dir)) >= 3, message="task and its escaped child")
        scheduler.close()
    finally:
        master.stop()
        master.stop()  # idempotent
    assert_no_processes(work_dir)


def test_basic_authentication(make_master):
    master = make_master(credentials={"alice": "s3cret"})
    good = "Basic " + base64.b64encode(b"alice:s3cret").decode()
    bad = "Basic " + base64.b64encode(b"alice:wrong").decode()
    body = {"type": "SUBSCRIBE", "subscribe": {"framework_info": {"user": "u", "name": "n"}}}
    for headers in (dict(JSON_HEADERS), {**JSON_HEADERS, "Authorization": bad}):
        reply = http_call(master.address, "POST", "/api/v1/scheduler", body, headers)
        assert (reply.status, reply.headers["WWW-Authenticate"]) == (401, 'Basic realm="mesos-master-scheduler"')
    mismatch = {"type": "SUBSCRIBE", "subscribe": {"framework_info": {"user": "u", "name": "n", "principal": "bob"}}}
    reply = http_call(master.address, "POST", "/api/v1/scheduler", mismatch, {**JSON_HEADERS, "Authorization": good})
    assert (reply.status, reply.body) == (400, "Failed to validate scheduler::Call: Authenticated principal 'alice' "
                                               "does not match principal 'bob' set in `FrameworkInfo`")
    assert http_call(master.address, "GET", "/version").status == 200  # read-only endpoints stay open

    scheduler = RawScheduler(master.address, auth=good)
    scheduler.subscribe({"user": "u", "name": "n"})
    assert master.state()["frameworks"][0]["principal"] == "alice"
    scheduler.auth = bad
    assert scheduler.framework_call("REVIVE").status == 401
    scheduler.auth = good
    assert scheduler.teardown().status == 202
    scheduler.close()


def test_executor_api_validation(make_master):
    master = make_master()
    (endpoint,) = master.agent_endpoints.values()
    ids = {"framework_id": {"value": "f"}, "executor_id": {"value": "e"}}

    def update(**status) -> tuple[int, str]:
        full = {"task_id": {"value": "t"}, "state": "TASK_RUNNING", "source": "SOURCE_EXECUTOR",
                "uuid": base64.b64encode(uuid.uuid4().bytes).decode()}
        full.update(status)
        reply = http_call(endpoint, "POST", "/api/v1/executor", {"type": "UPDATE", **ids, "update": {"status": full}},
                          {"Content-Type": "application/json"})
        return reply.status, reply.body

    assert update(state="TASK_STAGING") == (400, "Failed to validate Executor::Call: Received TASK_STAGING from "
                                                 "executor e of framework f which is not allowed")
    assert update(uuid="AAAA") == (400, "Failed to validate Executor::Call: Not a valid UUID")
    assert update(source="SOURCE_MASTER") == (400, "Failed to validate Executor::Call: Received Call from executor e "
                                                   "of framework f with invalid source, expecting 'SOURCE_EXECUTOR'")
    assert update() == (400, "Framework cannot be found")
    reply = http_call(endpoint, "POST", "/api/v1/executor", {"type": "SUBSCRIBE", "subscribe": {}},
                      {"Content-Type": "application/json"})
    assert (reply.status, reply.body) == (400, "Failed to convert JSON into Call protobuf: Missing required "
                                               "fields: executor_id, framework_id")
    assert http_call(endpoint, "GET", "/api/v1/executor").status == 405
    state = http_call(endpoint, "GET", "/state").body
    assert state["id"] in master.agent_endpoints and state["frameworks"] == []


def test_python_executable_of_the_caller_runs_tasks(make_master):
    master = make_master()
    scheduler = RawScheduler(master.address)
    scheduler.subscribe(framework_info("python"))
    offer = scheduler.next_offers()[0]
    task = command_task("py", offer["agent_id"]["value"],
                        f"{sys.executable} -c 'import os; print(sorted(k for k in os.environ if k.startswith(\"MESOS_\")))'")
    launch(scheduler, offer, [task])
    assert [scheduler.next_update()["state"] for _ in range(3)][-1] == "TASK_FINISHED"
    sandbox = next(master.work_dir.glob("agents/*/frameworks/*/executors/py/runs/latest"))
    printed = (sandbox / "stdout").read_text()
    assert "MESOS_ALLOCATION_ROLE" in printed and "MESOS_SANDBOX" in printed
    assert Path(sandbox.resolve()).name != "latest"
    scheduler.teardown()
    scheduler.close()


def test_ended_frameworks_are_kept_up_to_the_bound_and_an_agent_removes_the_sandboxes_it_drops(make_master):
    """A long-lived master bounds what it keeps of ended frameworks (Mesos' --max_completed_frameworks),
    and so does each agent, whose garbage collection removes the sandboxes of one it no longer lists."""
    kept = 2
    master = make_master(tuning=Tuning(stop_grace_period=1.0, max_completed_frameworks=kept,
                                       max_completed_tasks_per_framework=1))
    ended = []
    for i in range(kept + 3):
        scheduler = RawScheduler(master.address)
        scheduler.subscribe(framework_info(f"job-{i}"))
        offer = scheduler.next_offers()[0]
        tasks = [command_task(f"t{i}-{n}", offer["agent_id"]["value"], "true") for n in range(2)]
        assert launch(scheduler, offer, tasks, refuse_seconds=0).status == 202
        done = set()
        while len(done) < 2:
            status = scheduler.next_update()
            if status["state"] == "TASK_FINISHED":
                done.add(status["task_id"]["value"])
        assert scheduler.teardown().status == 202
        scheduler.close()
        ended.append(scheduler.framework_id)
        wait_until(lambda: scheduler.framework_id in [f["id"] for f in master.state()["completed_frameworks"]],
                   timeout=10, message=f"job-{i} ended")
    state = master.state()
    assert sorted(f["id"] for f in state["completed_frameworks"]) == sorted(ended[-kept:])
    assert all(len(f["completed_tasks"]) <= 1 for f in state["completed_frameworks"])
    frameworks_dir = next(master.work_dir.glob("agents/*/frameworks"))
    wait_until(lambda: sorted(p.name for p in frameworks_dir.iterdir()) == sorted(ended[-kept:]), timeout=10,
               message="the sandboxes of the frameworks the agent dropped removed")
    (agent,) = state["slaves"]
    agent_state = http_call(agent["pid"].split("@", 1)[1], "GET", "/state").body
    assert sorted(f["id"] for f in agent_state["completed_frameworks"]) == sorted(ended[-kept:])


def test_an_ended_framework_s_sandboxes_are_removed_after_the_gc_delay(make_master):
    master = make_master(tuning=Tuning(stop_grace_period=1.0, gc_delay=0.5))
    scheduler = RawScheduler(master.address)
    scheduler.subscribe(framework_info("gc"))
    running_task(master, scheduler, command="sleep 30")
    frameworks_dir = next(master.work_dir.glob("agents/*/frameworks"))
    assert [p.name for p in frameworks_dir.iterdir()] == [scheduler.framework_id]
    assert scheduler.teardown().status == 202
    scheduler.close()
    wait_until(lambda: not any(frameworks_dir.iterdir()), timeout=15, message="the sandboxes removed after gc_delay")
    assert [f["id"] for f in master.state()["completed_frameworks"]] == [scheduler.framework_id], "still listed"


def test_an_ended_executor_leaves_no_heartbeat_timer_holding_it(make_master, tmp_path):
    """The agent's 30-minute executor HEARTBEAT timer is cancelled when the executor's stream
    closes: pending, it held the executor and its tasks (a long-lived master grew ~50 KiB a job)."""
    import json
    import subprocess

    master = make_master()
    options = tmp_path / "job.json"
    options.write_text(json.dumps({"service": {"name": "heartbeat"}, "job": {"command": "true"},
                                   "roles": {"worker": {"count": 2, "cpus": 0.1, "mem": 32}}}))
    ran = subprocess.run([sys.executable, "-m", "tfmesos.client.cli", "run", str(options), "--master", master.address,
                          "-q", "--state-dir", str(tmp_path / "state")], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stdout[-2000:]

    def heartbeats() -> list:
        return [h for h in list(master._loop._scheduled)
                if not h.cancelled() and "heartbeat" in getattr(h._callback, "__qualname__", "").lower()]

    wait_until(lambda: master.state()["completed_frameworks"], timeout=10, message="the job's framework ended")
    wait_until(lambda: not heartbeats(), timeout=10, message="no executor heartbeat timer left")


def test_a_restarted_master_collects_the_sandboxes_its_previous_run_left(make_master, tmp_path):
    """Sandboxes of frameworks that ended before a restart on the same work dir are not left for
    ever: the agent schedules them at recovery, gc_delay after they were last written."""
    work = tmp_path / "kept-work"
    first = make_master(work_dir=work)
    scheduler = RawScheduler(first.address)
    scheduler.subscribe(framework_info("before-restart"))
    running_task(first, scheduler, command="sleep 30")
    assert scheduler.teardown().status == 202
    scheduler.close()
    wait_until(lambda: first.state()["completed_frameworks"], timeout=10, message="the framework ended")
    first.stop()
    frameworks_dir = next(work.glob("agents/*/frameworks"))
    assert [p.name for p in frameworks_dir.iterdir()] == [scheduler.framework_id], "a week's gc_delay keeps it"

    make_master(work_dir=work, tuning=Tuning(stop_grace_period=1.0, gc_delay=0.5))
    wait_until(lambda: not any(frameworks_dir.iterdir()), timeout=15, message="the left-over sandboxes removed")
