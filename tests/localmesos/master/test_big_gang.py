"""A gang over many agents at a small size: one offer per agent in one OFFERS event, one launch per
agent, every task run once on its own agent; and the allocator's metrics under Mesos' names."""
from __future__ import annotations

from tests.localmesos.scheduler_client import RawScheduler, command_task, framework_info, http_call, launch

AGENTS = 40


def test_a_gang_over_every_agent_runs_each_task_once_on_its_own_agent(make_master):
    master = make_master(agents=AGENTS, agent_cpus=1.0, agent_mem=256.0, ports_per_agent=2)
    scheduler = RawScheduler(master.address)
    scheduler.subscribe(framework_info("big-gang"))
    offers = scheduler.next_offers()
    assert len(offers) == AGENTS  # one round, one event, one offer per agent
    assert len({o["agent_id"]["value"] for o in offers}) == AGENTS
    metrics = http_call(master.address, "GET", "/metrics/snapshot").body
    assert metrics["master/outstanding_offers"] == AGENTS and metrics["master/slaves_active"] == AGENTS
    assert metrics["allocator/mesos/allocation_runs"] >= 1
    assert metrics["allocator/mesos/allocation_run_ms/max"] >= metrics["allocator/mesos/allocation_run_ms"] > 0
    where = {}
    for i, offer in enumerate(offers):
        task_id = f"t{i}"
        where[task_id] = offer["agent_id"]["value"]
        assert launch(scheduler, offer, [command_task(task_id, where[task_id], "exit 0", cpus=0.5)]).status == 202
    # Every offer was used: none of those received is outstanding. (An agent whose task has ended is
    # offered anew, its whole resources being more than the refused rest: on a loaded machine that
    # happens before the last launch, so the count of outstanding offers says nothing.)
    state = http_call(master.address, "GET", "/state").body
    outstanding = {o["id"] for f in state["frameworks"] for o in f["offers"]}
    assert outstanding.isdisjoint(o["id"]["value"] for o in offers), outstanding
    finished: dict[str, str] = {}
    while len(finished) < AGENTS:
        status = scheduler.next_update(timeout=60)
        assert status["state"] in ("TASK_STARTING", "TASK_RUNNING", "TASK_FINISHED"), status
        if status["state"] == "TASK_FINISHED":
            task_id = status["task_id"]["value"]
            assert task_id not in finished
            finished[task_id] = status["agent_id"]["value"]
    assert finished == where
    scheduler.teardown()
    scheduler.close()
