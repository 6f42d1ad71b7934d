"""Planned stops in the core (core/job/planned_stop.py): a drain or an update stops tasks at a
checkpoint, relaunches what the mode needs off the leaving agent, and counts no failure."""
import pytest

from tfmesos.core import actions as act
from tfmesos.core.job.job import Job
from tfmesos.core.phase import PLACING, RUNNING, SUCCEEDED
from tfmesos.core.spec import TaskKey
from tfmesos.core.state import notices
from tfmesos.core.task_state import PENDING, StatusUpdate, TaskState

from tests.core.helpers import offer, spec_of

W0, W1, CHIEF, PS0 = TaskKey("worker", 0), TaskKey("worker", 1), TaskKey("chief", 0), TaskKey("ps", 0)
DRAINING = "REASON_AGENT_DRAINING"
ONE_TASK = {"cpus": 0.6, "mem": 1088}  # an offer of one task's room: one task per agent


def of(kind, actions):
    return [a for a in actions if isinstance(a, kind)]


def running(**roles) -> Job:
    """Every role's count at 0 restarts allowed, each task on an agent of its own (S0, S1, ...)."""
    job = Job.new(spec_of(**{r: {"max_restarts": 0, **o} for r, o in roles.items()}), 0.0)
    job.offers([offer(i, **ONE_TASK) for i in range(len(job.tasks))], 0.0)
    assert job.phase == RUNNING
    for rec in job.tasks.values():
        job.status(StatusUpdate(rec.task_id, TaskState.TASK_RUNNING, agent_id=rec.agent_id), 1.0)
    return job


def update(job, key, state, reason="", exit_code=None, log_tail=""):
    rec = job.tasks[key]
    return job.status(StatusUpdate(rec.task_id, state, reason=reason, agent_id=rec.agent_id, exit_code=exit_code,
                                   log_tail=log_tail), 10.0)


def test_a_drained_mwms_worker_tells_its_peers_and_the_whole_job_moves_without_a_failure_counted():
    job = running(worker={"count": 2})
    leaving = job.tasks[W1].agent_id
    actions = update(job, W1, TaskState.TASK_KILLING, DRAINING)
    assert of(act.Notify, actions) == [act.Notify(job.tasks[W0].task_id, job.tasks[W0].agent_id,
                                                  "agent h1 draining", "drain")]
    assert job.leaving_agents == {leaving: "agent h1 draining"}
    # TensorFlow's handler: every worker saves at the agreed step and exits 42.
    actions = update(job, W0, TaskState.TASK_FAILED, exit_code=42)
    assert job.phase == PLACING and not of(act.Kill, actions), "the draining agent stops worker:1 itself"
    update(job, W1, TaskState.TASK_KILLED, DRAINING, exit_code=42,
           log_tail="tfmesos: planned stop (agent h1 draining): saved at step 4210; exiting 42\n")
    assert all(r.state == PENDING and r.restarts == 0 for r in job.tasks.values())
    assert job.job_restarts == 0 and [r.planned_stops for r in job.tasks.values()] == [1, 1]
    said = [e for e in job.events if "draining" in e]
    assert said == ["agent h1 draining: worker:1 saved at step 4,210, moving (planned stop #1, not counted "
                    "against max_restarts)"], job.events
    # Placed again, never on the leaving agent: its offer is declined though it fits the job.
    actions = job.offers([offer(1, cpus=8, mem=16384), offer(5, cpus=8, mem=16384)], 11.0)
    launched = of(act.Launch, actions)
    assert [a.agent_id for a in launched] == ["S5"] and len(launched[0].tasks) == 2
    assert of(act.Decline, actions)[0].offer_ids == ("O1",)


def test_the_drain_seen_only_in_the_end_is_still_planned_and_the_job_lives_on():
    job = running(worker={"count": 1})
    update(job, W0, TaskState.TASK_KILLED, DRAINING, exit_code=143)
    assert job.phase == PLACING and job.tasks[W0].planned_stops == 1 and job.tasks[W0].restarts == 0
    assert "stopped without saving (exit 143): it resumes from its last checkpoint" in job.events[-1]
    assert job.leaving_agents == {"S0": "agent h0 draining"}


def test_a_sigkill_at_the_end_of_the_grace_is_a_failure_as_any():
    job = running(worker={"count": 2})
    update(job, W1, TaskState.TASK_KILLING, DRAINING)
    update(job, W1, TaskState.TASK_KILLED, DRAINING, exit_code=137)
    assert job.ending == "FAILED" and "exit code 137" in job.cause and "not relaunched" in job.cause


def test_an_exit_42_without_a_notice_is_the_scripts_own_failure():
    job = running(worker={"count": 2, "restart_policy": "ExitCode"})
    update(job, W0, TaskState.TASK_FAILED, exit_code=42)
    assert job.ending == "FAILED"


def test_a_drained_pss_worker_moves_with_the_chief_the_ps_stays():
    job = running(chief={"count": 1}, ps={"count": 1}, worker={"count": 2, "server": True})
    ps_task = job.tasks[PS0].task_id
    actions = update(job, W1, TaskState.TASK_KILLING, DRAINING)
    assert [n.task_id for n in of(act.Notify, actions)] == [job.tasks[CHIEF].task_id]
    # The chief saves and exits 42: the drained worker, serving on meanwhile, gets its second kill.
    actions = update(job, CHIEF, TaskState.TASK_FAILED, exit_code=42,
                     log_tail="tfmesos: planned stop (agent h3 draining): saved at step 120; exiting 42")
    assert of(act.Kill, actions) == [act.Kill(job.tasks[W1].task_id, job.tasks[W1].agent_id)]
    assert job.phase == RUNNING and job.tasks[CHIEF].state == PENDING
    # Nothing is placed while the worker still serves: the chief must learn its new address.
    assert not of(act.Launch, job.offers([offer(7, cpus=8, mem=16384)], 11.0))
    update(job, W1, TaskState.TASK_KILLED, DRAINING, exit_code=0)
    actions = job.offers([offer(3, cpus=8, mem=16384), offer(7, cpus=8, mem=16384)], 12.0)
    launched = of(act.Launch, actions)
    assert [(a.agent_id, sorted(str(t.key) for t in a.tasks)) for a in launched] == [("S7", ["chief:0", "worker:1"])]
    assert not of(act.Kill, actions), "the chief launched with the worker is not restarted for it"
    assert job.tasks[PS0].task_id == ps_task and job.tasks[PS0].state == TaskState.TASK_RUNNING
    assert job.job_restarts == 0 and job.tasks[CHIEF].restarts == 0 and job.tasks[CHIEF].planned_stops == 1
    assert any(e.startswith("agent h3 draining: worker:1 stopped cleanly, moving") for e in job.events)


def test_a_drained_ps_takes_the_whole_job_once_the_chief_has_saved():
    job = running(chief={"count": 1}, ps={"count": 1}, worker={"count": 1, "server": True})
    update(job, PS0, TaskState.TASK_KILLING, DRAINING)
    actions = update(job, CHIEF, TaskState.TASK_FAILED, exit_code=42)
    assert of(act.Kill, actions) == [act.Kill(job.tasks[PS0].task_id, job.tasks[PS0].agent_id)]
    actions = update(job, PS0, TaskState.TASK_KILLED, DRAINING, exit_code=0)
    assert job.phase == PLACING and of(act.Kill, actions) == [act.Kill(job.tasks[W0].task_id, job.tasks[W0].agent_id)]
    assert job.job_restarts == 0


def test_the_chiefs_agent_drained_in_pss_moves_the_chief_alone():
    job = running(chief={"count": 1}, ps={"count": 1}, worker={"count": 1, "server": True})
    actions = update(job, CHIEF, TaskState.TASK_KILLING, DRAINING)
    assert not of(act.Notify, actions), "nobody else saves for the chief"
    update(job, CHIEF, TaskState.TASK_KILLED, DRAINING, exit_code=42)
    assert job.phase == RUNNING and job.tasks[CHIEF].state == PENDING and job.tasks[CHIEF].avoid_agent == "S0"
    assert [r.state for k, r in job.tasks.items() if k != CHIEF] == [TaskState.TASK_RUNNING] * 2


def test_the_masters_agents_stop_placement_there_and_tell_the_tasks_on_them():
    job = running(worker={"count": 2})
    assert job.agents_leaving({"S0": ("h0", "deactivated")}, 4.0) == [], "a deactivated agent keeps its tasks"
    assert job.leaving_agents == {"S0": "agent h0 deactivated"} and not job.tasks[W0].stopping
    actions = job.agents_leaving({"S1": ("h1", "draining")}, 5.0)
    assert isinstance(actions[0], act.Persist)
    assert [n.task_id for n in of(act.Notify, actions)] == [job.tasks[W0].task_id]  # the agent stops worker:1
    assert job.tasks[W1].stopping == "agent h1 draining"
    assert job.agents_leaving({}, 6.0) == [] and job.leaving_agents == {}


def test_stop_gracefully_tells_then_kills_and_relaunches_uncounted():
    job = running(chief={"count": 1}, ps={"count": 1}, worker={"count": 2, "server": True})
    actions = job.stop_gracefully([W1], "update to 4 workers", 5.0)
    w1, chief = job.tasks[W1], job.tasks[CHIEF]
    assert actions[0] == act.Persist()
    assert actions[1:] == [act.Notify(w1.task_id, w1.agent_id, "update to 4 workers", "update"),
                           act.Kill(w1.task_id, w1.agent_id),
                           act.Notify(chief.task_id, chief.agent_id, "update to 4 workers", "update")]
    update(job, CHIEF, TaskState.TASK_FAILED, exit_code=42)
    update(job, W1, TaskState.TASK_KILLED, exit_code=0)
    assert (w1.state, w1.planned_stops, w1.restarts, w1.avoid_agent) == (PENDING, 1, 0, "")
    assert any(e.startswith("update to 4 workers: worker:1 stopped cleanly, moving") for e in job.events)


def test_stop_gracefully_refuses_what_it_cannot_stop_naming_why():
    job = Job.new(spec_of(worker={"count": 1}), 0.0)
    with pytest.raises(ValueError, match="the job is PLACING"):
        job.stop_gracefully([W0], "update", 1.0)
    job = running(worker={"count": 1})
    with pytest.raises(ValueError, match="no such task"):
        job.stop_gracefully([TaskKey("worker", 5)], "update", 1.0)


def test_a_success_still_ends_the_job_after_a_planned_stop():
    job = running(worker={"count": 1})
    update(job, W0, TaskState.TASK_KILLED, DRAINING, exit_code=42)
    job.offers([offer(9, cpus=8, mem=16384)], 20.0)
    update(job, W0, TaskState.TASK_RUNNING)
    update(job, W0, TaskState.TASK_FINISHED, exit_code=0)
    assert job.phase == SUCCEEDED or job.ending == SUCCEEDED


@pytest.mark.parametrize("tail, said", [
    ("x\ntfmesos: planned stop (agent h1 draining): saved at epoch 3, batch 20; exiting 42\n", "epoch 3, batch 20"),
    ("tfmesos: planned stop (r): saved at step 12345; exiting 42", "step 12,345"),
    ("Traceback ...", ""),
])
def test_where_a_task_saved_is_read_from_its_own_line(tail, said):
    assert notices.saved_at(tail) == said


def test_a_told_peer_saving_is_not_killed_before_the_stop_grace():
    job = running(worker={"count": 2})
    update(job, W1, TaskState.TASK_KILLING, DRAINING)
    actions = update(job, W1, TaskState.TASK_KILLED, DRAINING, exit_code=42)  # the drained worker ends first
    assert job.phase == PLACING and not of(act.Kill, actions), "worker:0 saves at the agreed step and exits"
    grace = job.spec.policies.stop_grace_seconds
    assert not of(act.Kill, job.tick(10.0 + grace / 2))
    assert of(act.Kill, job.tick(10.0 + grace + 5.0)) == [act.Kill(job.tasks[W0].task_id, job.tasks[W0].agent_id)]
    update(job, W0, TaskState.TASK_FAILED, exit_code=42)
    assert job.tasks[W0].planned_stops == 1 and job.tasks[W0].restarts == 0
    assert not any("worker:0" in e and "moving" in e for e in job.events), "a peer is not the one leaving"


def test_a_told_chief_that_never_saves_is_restarted_after_the_grace_and_the_worker_placed_with_it():
    job = running(chief={"count": 1}, ps={"count": 1}, worker={"count": 2, "server": True})
    update(job, W1, TaskState.TASK_KILLING, DRAINING)
    update(job, W1, TaskState.TASK_KILLED, DRAINING, exit_code=0)  # served until its deadline: the chief did not save
    assert not of(act.Launch, job.offers([offer(7, cpus=8, mem=16384)], 11.0)), "waits for the chief"
    grace = job.spec.policies.stop_grace_seconds
    assert of(act.Kill, job.tick(10.0 + grace + 5.0)) == [act.Kill(job.tasks[CHIEF].task_id, job.tasks[CHIEF].agent_id)]
    update(job, CHIEF, TaskState.TASK_KILLED, exit_code=143)
    launched = of(act.Launch, job.offers([offer(8, cpus=8, mem=16384)], 50.0))
    assert sorted(str(t.key) for a in launched for t in a.tasks) == ["chief:0", "worker:1"]
    assert job.job_restarts == 0 and job.tasks[CHIEF].restarts == 0
