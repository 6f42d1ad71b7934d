"""A tfmesos executor on an agent that speaks another protocol than the scheduler: the TaskInfo
the scheduler builds reaches the real executor through the embedded master, and the task fails
with a status message naming both protocol versions (never a KeyError in an executor thread)."""
from __future__ import annotations

import base64
import json
import sys

from tests.localmesos.scheduler_client import RawScheduler, framework_info

from tfmesos.core.actions import TaskLaunch
from tfmesos.mesos import messages
from tfmesos.mesos.taskinfo import ExecutorSettings, OfferLedger, build_task_info
from tfmesos.options.load import resolve_options
from tfmesos.core.spec import Resources, TaskKey
from tfmesos.options.jobspec import job_spec_from_options


def test_an_executor_of_another_protocol_fails_the_task_naming_both_versions(make_master):
    master = make_master()
    scheduler = RawScheduler(master.address)
    scheduler.subscribe(framework_info("protocol-version"))
    try:
        offer = scheduler.next_offers()[0]
        spec = job_spec_from_options(resolve_options({"service": {"name": "pv"}, "job": {"command": "true"},
                                                      "roles": {"worker": {"count": 1, "cpus": 0.1, "mem": 32}}}))
        port = next(r for r in offer["resources"] if r["name"] == "ports")["ranges"]["range"][0]["begin"]
        task = build_task_info(spec, TaskLaunch(TaskKey("worker", 0), "pv.worker.0.1", port, Resources(0.1, 32), 0),
                               offer["agent_id"]["value"], OfferLedger(offer), ExecutorSettings(python=sys.executable))
        # What a scheduler one protocol ahead would send: today's payload with the next version.
        newer = messages.to_wire(messages.decode(task["data"])) | {"v": messages.PROTOCOL + 1}
        task["data"] = base64.b64encode(json.dumps(newer).encode()).decode()
        accept = {"offer_ids": [offer["id"]], "operations": [{"type": "LAUNCH", "launch": {"task_infos": [task]}}]}
        assert scheduler.framework_call("ACCEPT", accept).status == 202
        status = scheduler.next_update(timeout=60, task_id="pv.worker.0.1")
        while status["state"] not in ("TASK_FAILED", "TASK_FINISHED", "TASK_LOST", "TASK_ERROR"):
            status = scheduler.next_update(timeout=60, task_id="pv.worker.0.1")
        assert status["state"] == "TASK_FAILED", status
        said = status.get("message", "")
        assert said.startswith("tfmesos executor:"), said  # the executor said it, not the agent
        assert f"protocol {messages.PROTOCOL + 1}" in said and f"speaks protocol {messages.PROTOCOL}" in said, said
        scheduler.teardown()
    finally:
        scheduler.close()
