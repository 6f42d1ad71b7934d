"""``tfmesos update`` in the core: the diff of two specs (what changes, what that restarts, what
cannot change and why), and a running job taking the new spec: tasks added and removed, the
whole job back to PLACING at once, no failure counted, the spec's new tasks launched."""
from __future__ import annotations

import pytest

from tfmesos.core import actions as act
from tfmesos.core.job.job import Job
from tfmesos.core.job.spec_diff import diff
from tfmesos.core.job.update import UpdateRefused
from tfmesos.core.phase import FINISHING, PLACING, RUNNING
from tfmesos.core.spec import TaskKey
from tfmesos.core.task_state import StatusUpdate, TaskState
from tfmesos.options.jobspec import job_spec_from_options
from tfmesos.options.load import resolve_options

from tests.core.helpers import offer
from tests.core.job.test_job import launch_all, of, run_all

W = [TaskKey("worker", i) for i in range(4)]


def spec(workers: int = 2, service: dict | None = None, job: dict | None = None, **roles: dict):
    options = {"service": {"name": "u", **(service or {})},
               "job": {"command": "python train.py", "env": ["LR=0.1", "TOKEN=s3cret"], **(job or {})},
               "roles": {"worker": {"count": workers}, **roles}}
    return job_spec_from_options(resolve_options(options))


def test_more_workers_add_tasks_and_restart_the_whole_job():
    d = diff(spec(2), spec(4))
    assert [str(c) for c in d.changes] == ["$.roles.worker.count: 2 -> 4"]
    assert d.added == (W[2], W[3]) and d.removed == () and d.whole_job and d.restarts == (W[0], W[1])
    assert not d.refused


def test_fewer_workers_remove_the_last_ones():
    d = diff(spec(4), spec(2))
    assert d.removed == (W[2], W[3]) and d.added == () and d.whole_job and d.restarts == (W[0], W[1])


def test_the_same_spec_is_a_graceful_whole_job_restart():
    d = diff(spec(2), spec(2))
    assert d.same and d.whole_job and d.restarts == (W[0], W[1])
    assert "graceful restart" in d.restart_text()


def test_policies_alone_restart_nothing():
    d = diff(spec(2), spec(2, worker={"count": 2, "max_restarts": 7}))
    assert [str(c) for c in d.changes] == ["$.roles.worker.max_restarts: 3 -> 7"]
    assert not d.whole_job and d.restarts == ()
    assert d.restart_text() == "nothing stops: the policies apply from now on"


def test_env_changes_name_the_variables_never_their_values():
    d = diff(spec(2), spec(2, job={"env": ["LR=0.2", "TOKEN=s3cret", "NEW=x"]}))
    (change,) = d.changes
    assert change.field == "$.job.env" and change.now == "NEW added; LR changed"
    assert "0.2" not in str(d.lines()) and "s3cret" not in str(d.lines())
    assert d.whole_job


def test_a_parameter_server_job_restarts_only_the_role_whose_launch_changed():
    pss = dict(ps={"count": 1}, chief={"count": 1})
    new = spec(2, worker={"count": 2, "server": True, "cpus": 2}, **pss)
    old = spec(2, worker={"count": 2, "server": True}, **pss)
    d = diff(old, new)
    assert [str(c) for c in d.changes] == ["$.roles.worker.cpus: 0.5 -> 2"]
    assert not d.whole_job and d.restarts == (W[0], W[1]), "a PSS worker is relaunched, not the whole job"
    # The chief is told too (it saves at the step and must learn the new addresses): the plan says so.
    assert d.saving == (TaskKey("chief", 0),)
    assert d.restart_text() == ("worker:0, worker:1 stop at a planned stop and resume from the checkpoint; "
                                "chief:0 saves at the step and restarts with them")
    assert diff(old, spec(2, worker={"count": 3, "server": True}, **pss)).saving == (), "the whole job: no peer apart"


def test_what_cannot_change_is_refused_naming_the_field_and_why():
    d = diff(spec(2), spec(2, service={"name": "v", "role": "team", "principal": "p"}, job={"checkpoint_dir": "/x"}))
    fields = [problem.split(":")[0] for problem in d.refused]
    assert fields == ["$.service.name", "$.service.role", "$.service.principal", "$.job.checkpoint_dir"]
    assert "a new job (tfmesos run)" in d.refused[0] and "new framework" in d.refused[1]


def running(workers: int = 2):
    job = Job.new(spec(workers), 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    assert job.phase == RUNNING
    return job, launched


def test_an_update_from_2_to_4_workers_kills_both_and_places_all_four():
    job, launched = running(2)
    d, actions = job.update(spec(4), 10.0)
    assert isinstance(actions[0], act.Persist), "recorded before anything is killed"
    assert {k.task_id for k in of(act.Kill, actions)} == {t.task_id for t in launched.values()}
    assert {(n.task_id, n.kind) for n in of(act.Notify, actions)} == {(t.task_id, "update") for t in launched.values()}, \
        "each told before its SIGTERM: it saves at the step"
    assert job.phase == PLACING and list(job.tasks) == W and job.spec.count("worker") == 4
    assert any(e.startswith("updated: $.roles.worker.count: 2 -> 4") for e in job.events)
    for t in launched.values():  # saved at the step: PreemptionCheckpointHandler's exit
        job.status(StatusUpdate(t.task_id, TaskState.TASK_KILLED, agent_id="S0", exit_code=42), 10.5)
    relaunch = job.offers([offer(0, cpus=16, mem=32768)], 11.0)
    placed = {t.key for l in of(act.Launch, relaunch) for t in l.tasks}
    assert placed == set(W), "the gang of four, at once"
    message = job.cluster_spec_message()  # what each executor is sent when it asks (cluster_spec_sync)
    assert message is not None and len(message["cluster"]["worker"]) == 4
    assert job.job_restarts == 0 and all(r.restarts == 0 for r in job.tasks.values()), "no failure counted"
    assert [job.tasks[k].planned_stops for k in W] == [1, 1, 0, 0], "counted apart, as planned stops"


def test_an_update_to_fewer_workers_kills_the_removed_and_forgets_them():
    job, launched = running(4)
    job.update(spec(2), 5.0)
    assert list(job.tasks) == W[:2] and job.key_of(launched[W[3]].task_id) is None
    # A late update of a removed task's attempt: no task of the job, killed if live.
    late = job.status(StatusUpdate(launched[W[3]].task_id, TaskState.TASK_RUNNING, agent_id="S0"), 5.1)
    assert of(act.Kill, late) == [act.Kill(launched[W[3]].task_id, "S0")]


def test_a_refused_update_changes_nothing():
    job, launched = running(2)
    before = (job.spec, dict(job.tasks), list(job.events))
    with pytest.raises(UpdateRefused) as refused:
        job.update(spec(4, service={"name": "other"}), 1.0)
    assert refused.value.problems[0].startswith("$.service.name: u cannot change to other")
    assert (job.spec, dict(job.tasks), list(job.events)) == before


def test_a_job_that_is_ending_takes_no_update():
    job, _ = running(2)
    job.stop("asked", 1.0)
    assert job.phase == FINISHING
    with pytest.raises(UpdateRefused) as refused:
        job.plan_update(spec(4))
    assert refused.value.now and "FINISHING" in str(refused.value)


def test_the_same_options_again_restart_the_whole_job_gracefully():
    job, launched = running(2)
    d, actions = job.update(spec(2), 3.0)
    assert d.same and job.phase == PLACING
    assert {n.task_id for n in of(act.Notify, actions)} == {k.task_id for k in of(act.Kill, actions)} == \
        {t.task_id for t in launched.values()}
    assert any("(nothing changes: a graceful restart)" in e for e in job.events)
