"""The queue watch over the master's answers given as plain data (what /state and the quota
questions return): a job that never fits fails on the second answer, one that fits is queued
with the figures, behind an older tfmesos job still being placed, or waits for its role's quota."""
from tfmesos.core import actions as act
from tfmesos.core.placement.fit import Agent, Framework
from tfmesos.core.job.job import Job
from tfmesos.core.phase import FAILED, PLACING
from tfmesos.scheduler.queue_watch import ASK_EVERY, QueueWatch

from tests.core.helpers import offer, spec_of

AGENTS = [Agent(f"S{i}", f"h{i}", {"cpus": 1.0, "mem": 1024.0}, {"cpus": 0.9, "mem": 192.0}) for i in range(2)]
OTHER = Framework("F-other", "job-a", "*", {"cpus": 1.8, "mem": 384.0}, registered=1.0)


def watch(quota=None):
    return QueueWatch(quota, lambda: None, ("*",), framework_id=lambda: "F-me")


def test_a_job_that_never_fits_fails_on_the_second_answer_naming_the_resource():
    job, w = Job.new(spec_of(chief={"count": 1, "cpus": 1.6, "mem": 128}), 0.0), watch()
    answers = ((AGENTS, []), [])
    assert w.due(job, 0.0) and w.judge(job, 0.0, answers) is None, "one answer may be an agent still registering"
    assert not w.due(job, ASK_EVERY / 2)
    job.offers([offer(0, cpus=1)], 0.5)  # unplaced: held back
    assert w.due(job, ASK_EVERY)
    actions = w.judge(job, ASK_EVERY, answers)
    assert actions and isinstance(actions[0], act.Persist), "the end is recorded first"
    assert job.ending == FAILED and "one chief task needs cpus 1.7" in job.cause


def test_a_job_that_fits_but_finds_no_room_is_queued_with_the_figures_and_whom_it_waits_behind():
    job, w = Job.new(spec_of(chief={"count": 1, "cpus": 0.8, "mem": 128}), 0.0), watch()
    me = Framework("F-me", "me", "*", {}, registered=3.0, placing=True)
    older = Framework("F-old", "older", "*", {}, registered=2.0, placing=True)
    assert w.judge(job, 0.0, ((AGENTS, [OTHER, me, older]), [])) == [], "behind an older job at once"
    assert job.transient.behind == "older" and job.phase == PLACING
    assert "needs cpus 0.9, mem 192 MB; free cpus 0.2, mem 1664 MB of cpus 2, mem 2048 MB" in job.transient.queued
    assert "held by other frameworks cpus 1.8, mem 384 MB: job-a (*)" in job.transient.queued
    assert job.transient.queued.endswith("; behind older, submitted earlier and still being placed")
    # The older one placed: this one revives, so the offers it gave back come again at once.
    assert w.judge(job, 2.0, ((AGENTS, [OTHER, me]), [])) == [act.Revive()]
    assert job.transient.behind == ""


def test_quota_is_one_case_of_queued():
    job = Job.new(spec_of(chief={"count": 1, "cpus": 0.9, "mem": 128}), 0.0)
    job.offers([offer(0, cpus=0.2)], 0.1)
    w = watch(quota=lambda role: None)
    assert w.judge(job, 3.0, ((AGENTS, [OTHER]), [({"cpus": 1.2}, {"cpus": 1.0})])) == []
    assert job.transient.queued.startswith("waiting for role *'s quota (not for offers): cpus 1 needed, limit 1.2")
    assert job.transient.queued_since == 3.0


def test_a_whole_job_restart_waiting_for_its_own_ending_tasks_is_not_queued():
    """Its killed workers still hold the agents (the master counts them as this framework's): no
    'queued ... held by other frameworks' naming its own tasks."""
    job, w = Job.new(spec_of(chief={"count": 1, "cpus": 0.8, "mem": 128}), 0.0), watch()
    job.offers([offer(0, cpus=0.2)], 0.1)  # unplaced: held back
    me = Framework("F-me", "me", "*", {"cpus": 1.8, "mem": 384.0}, registered=3.0)
    assert w.judge(job, 3.0, ((AGENTS, [me]), [])) is None or job.transient.queued == ""
    assert job.transient.queued == "" and job.transient.queued_since is None and not job.events
    # Half of it another framework's work: queued, its own ending tasks apart, the figures adding up.
    me = Framework("F-me", "me", "*", {"cpus": 0.9, "mem": 192.0}, registered=3.0)
    other = Framework("F-other", "job-a", "*", {"cpus": 0.9, "mem": 192.0}, registered=1.0)
    w.judge(job, 5.0, ((AGENTS, [me, other]), []))
    assert job.transient.queued == (
        "queued (the cluster fits the job, but not now): needs cpus 0.9, mem 192 MB; free cpus 0.2, mem 1664 MB "
        "of cpus 2, mem 2048 MB; held by other frameworks cpus 0.9, mem 192 MB: job-a (*) cpus 0.9, mem 192 MB; "
        "held by this job's own tasks cpus 0.9, mem 192 MB")


def test_while_running_the_agents_leaving_are_read_every_few_seconds_and_kept_off():
    from tfmesos.scheduler.queue_watch import LEAVING_ASK_EVERY

    job, w = Job.new(spec_of(worker={"count": 1, "cpus": 0.5, "mem": 128}), 0.0), watch()
    job.offers([offer(0)], 0.0)
    assert job.phase == "RUNNING" and w.due(job, 1.0) and not w.due(job, 1.0 + LEAVING_ASK_EVERY / 2)
    drained = Agent("S0", "h0", {"cpus": 1.0}, leaving="draining")
    assert w.judge(job, 2.0, (([drained, AGENTS[1]], []), [])) is None, "Mesos stops its task: nothing to send"
    assert job.leaving_agents == {"S0": "agent h0 draining"}
    assert job.tasks[next(iter(job.tasks))].stopping == "agent h0 draining"
    assert w.judge(job, 9.0, ((AGENTS, []), [])) is None and job.leaving_agents == {}, "reactivated: usable again"


def test_the_masters_state_says_which_agents_drain_or_are_deactivated():
    """Trace 13's /state (Mesos 1.12): agent 1 DRAINING, deactivated and not active."""
    import json
    from pathlib import Path

    from tfmesos.mesos import operator

    trace = Path(__file__).parents[1] / "data" / "mesos-traces" / "13-drain-killing-state.jsonl"
    bodies = [json.loads(line).get("body") for line in trace.read_text().splitlines()]
    state = next(b for b in bodies if isinstance(b, dict) and "slaves" in b and "deactivated_slaves" in b)
    assert {s["id"]: operator._leaving(s) for s in state["slaves"]} == {"<AGENT_ID_2>": "", "<AGENT_ID_1>": "draining"}
    assert operator._leaving({"hostname": "h", "deactivated": True}) == "deactivated"
