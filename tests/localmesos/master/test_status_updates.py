"""Reliable status updates: one in flight per task, retried until acknowledged."""
from __future__ import annotations

import time

from tests.localmesos.scheduler_client import RawScheduler, command_task, framework_info, launch

from localmesos import Tuning


def test_update_is_retried_with_backoff_until_acknowledged(make_master):
    master = make_master(tuning=Tuning(status_update_retry_min=0.3, status_update_retry_max=0.6,
                                       stop_grace_period=1.0))
    scheduler = RawScheduler(master.address)
    scheduler.subscribe(framework_info("retry"))
    offer = scheduler.next_offers()[0]
    assert launch(scheduler, offer, [command_task("t", offer["agent_id"]["value"], "sleep 30")]).status == 202

    first = scheduler.next_update(ack=False)
    sent = [time.monotonic()]
    assert first["state"] == "TASK_STARTING" and "uuid" in first
    for _ in range(3):
        again = scheduler.next_update(ack=False, timeout=3)
        sent.append(time.monotonic())
        assert again == first, "the same update (same uuid) is re-sent; RUNNING waits behind it"
    gaps = [b - a for a, b in zip(sent, sent[1:])]
    # 0.3, 0.6, capped at 0.6. A gap is measured between receipts here, so a receipt this process
    # took late (a loaded machine: 57 ms seen) shortens the gap after it: the lower bounds leave
    # 0.1 s for that, still apart from no backoff (all 0.3) and no cap (1.2); the sum only loses
    # the first receipt's lateness.
    assert 0.2 < gaps[0] < 0.5 and 0.45 < gaps[1] < 0.8 and 0.45 < gaps[2] < 0.8, gaps
    assert 1.35 < sent[3] - sent[0] < 2.1, gaps

    scheduler.acknowledge(first)
    running = scheduler.next_update(ack=False, timeout=2)
    assert running["state"] == "TASK_RUNNING" and running["uuid"] != first["uuid"]
    # Acknowledging a stale uuid does not move the stream on.
    scheduler.acknowledge(first)
    assert scheduler.next_update(ack=False, timeout=3)["uuid"] == running["uuid"]
    scheduler.acknowledge(running)
    assert scheduler.stream is not None
    scheduler.stream.expect_silence(0.8, types=("UPDATE",))
    scheduler.teardown()
    scheduler.close()


def test_pending_update_is_resent_when_the_framework_resubscribes(make_master):
    master = make_master()  # default 10 s retry: only the resubscription can explain a quick resend
    scheduler = RawScheduler(master.address)
    scheduler.subscribe(framework_info("resend"))
    offer = scheduler.next_offers()[0]
    launch(scheduler, offer, [command_task("t", offer["agent_id"]["value"], "sleep 30")])
    starting = scheduler.next_update(ack=False)
    scheduler.close()  # drop the connection without acknowledging

    again = RawScheduler(master.address)
    again.subscribe(framework_info("resend"), framework_id=scheduler.framework_id)
    resent = again.next_update(ack=False, timeout=3)
    assert resent["uuid"] == starting["uuid"] and resent["state"] == "TASK_STARTING"
    again.acknowledge(resent)
    assert again.next_update(timeout=3)["state"] == "TASK_RUNNING"
    again.teardown()
    again.close()


def test_master_generated_updates_have_no_uuid(make_master):
    master = make_master()
    scheduler = RawScheduler(master.address)
    scheduler.subscribe(framework_info("no-uuid"))
    scheduler.next_offers()
    assert scheduler.framework_call("RECONCILE", {"tasks": [{"task_id": {"value": "ghost"}}]}).status == 202
    status = scheduler.next_update(ack=False)
    assert status == {"task_id": {"value": "ghost"}, "state": "TASK_LOST", "message": "Reconciliation: Task is unknown",
                      "source": "SOURCE_MASTER", "reason": "REASON_RECONCILIATION",
                      "timestamp": status["timestamp"]}
    scheduler.teardown()
    scheduler.close()
