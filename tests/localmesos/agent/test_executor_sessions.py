"""An HTTP executor's session with its agent: the updates a re-subscribing executor carries are
taken and acknowledged, as Mesos acknowledges every update it takes (else the executor waits
for an acknowledgement that never comes)."""
from __future__ import annotations

import json
import sys

from tests.localmesos.sandbox_procs import EXECUTORS, assert_no_processes
from tests.localmesos.scheduler_client import RawScheduler, framework_info, launch, scalar, wait_until


def test_updates_carried_by_a_resubscribing_executor_are_taken_and_acknowledged(make_master):
    master = make_master()
    scheduler = RawScheduler(master.address)
    scheduler.subscribe(framework_info("resubscribe"))
    offer = scheduler.next_offers()[0]
    task = {"name": "t", "task_id": {"value": "t"}, "agent_id": offer["agent_id"],
            "resources": [scalar("cpus", 0.1), scalar("mem", 32)],
            "executor": {"executor_id": {"value": "exec-resubscribe"},
                         "command": {"value": f"{sys.executable} {EXECUTORS / 'raw_executor.py'} --resubscribe"},
                         "resources": [scalar("cpus", 0.1), scalar("mem", 32)]}}
    assert launch(scheduler, offer, [task]).status == 202
    finished = scheduler.next_update(task_id="t")
    assert finished["state"] == "TASK_FINISHED" and finished["source"] == "SOURCE_EXECUTOR"

    def events() -> list[dict]:
        logs = list(master.work_dir.glob("agents/*/frameworks/*/executors/exec-resubscribe/runs/*/recorder.log"))
        lines = [json.loads(line) for line in logs[0].read_text().splitlines()] if logs else []
        return [line["event"]["type"] for line in lines if "event" in line]

    seen = wait_until(lambda: (lambda e: e if "ACKNOWLEDGED" in e else None)(events()), timeout=20,
                      message="the agent's ACKNOWLEDGED of the re-sent update")
    assert seen[-2:] == ["SUBSCRIBED", "ACKNOWLEDGED"], seen
    assert scheduler.teardown().status == 202
    scheduler.close()
    assert_no_processes(master.work_dir)
