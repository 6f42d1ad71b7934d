"""TensorFlow's profile (tfmesos/core/tensorflow/profile.py) alone, and the lifecycle asking it rather
than knowing TensorFlow itself."""
import dataclasses

import pytest

from tfmesos.core import actions as act
from tfmesos.core.tensorflow import profile as tf
from tfmesos.core.tensorflow.clusterspec import cluster_spec
from tfmesos.core.job.job import Job
from tfmesos.core.phase import FAILED, PLACING, RUNNING
from tfmesos.core.task_state import StatusUpdate, TaskState
from tfmesos.core.profile import PeerRestart
from tfmesos.core.spec import TENSORBOARD, JobSpec, TaskKey

from tests.core.helpers import offer, spec_of

PS_JOB = dict(ps={"count": 1}, worker={"count": 2}, chief={"count": 1})
COLLECTIVE_JOB = dict(worker={"count": 2}, chief={"count": 1})


def _keys(*names: str) -> tuple[TaskKey, ...]:
    return tuple(TaskKey(role, int(index)) for role, index in (n.split(":") for n in names))


def test_the_spec_follows_tensorflows_profile():
    spec = spec_of(**PS_JOB)
    assert spec.profile is tf.TENSORFLOW and spec.success_keys == tf.success_keys(spec)


@pytest.mark.parametrize("roles, mode", [(PS_JOB, "parameter_server"), (COLLECTIVE_JOB, "collective"),
                                         (dict(worker={"count": 1}), "collective")])
def test_parameter_servers_make_a_parameter_server_job_else_it_is_collective(roles, mode):
    spec = spec_of(**roles)
    assert tf.mode(spec) == mode and Job.new(spec, 0.0).mode == mode


@pytest.mark.parametrize("roles, success, keys", [
    (PS_JOB, "chief", ("chief:0",)),
    (dict(ps={"count": 1}, worker={"count": 2}), "chief", ("worker:0",)),  # no chief: worker 0 is its stand-in
    (PS_JOB, "worker0", ("worker:0",)),
    (PS_JOB, "all_workers", ("worker:0", "worker:1")),
    (PS_JOB, "never", ()),
])
def test_success_keys_follow_the_success_policy(roles, success, keys):
    spec = spec_of(**roles)
    spec = dataclasses.replace(spec, policies=dataclasses.replace(spec.policies, success=success))
    assert tf.success_keys(spec) == _keys(*keys)


@pytest.mark.parametrize("roles, whole_job", [
    (PS_JOB, {"ps": True, "worker": False, "chief": False, "evaluator": False, TENSORBOARD: False}),
    (COLLECTIVE_JOB, {"ps": False, "worker": True, "chief": True, "evaluator": False, TENSORBOARD: False}),
])
def test_the_tasks_whose_loss_restarts_the_whole_job(roles, whole_job):
    spec = spec_of(**roles)
    assert {role: tf.restarts_whole_job(spec, TaskKey(role, 0)) for role in whole_job} == whole_job


def test_a_worker_moved_in_a_parameter_server_job_restarts_the_chief_and_nothing_else_does():
    ps_job, collective = spec_of(**PS_JOB), spec_of(**COLLECTIVE_JOB)
    chief = (PeerRestart("chief", "a worker moved to a new address"),)
    assert tf.restart_when_moved(ps_job, _keys("worker:1")) == chief
    assert tf.restart_when_moved(ps_job, _keys("ps:0", "worker:0")) == chief
    assert tf.restart_when_moved(ps_job, _keys("ps:0", "evaluator:0")) == ()
    assert tf.restart_when_moved(collective, _keys("worker:1")) == ()


def test_tensorboard_alone_is_not_essential():
    spec = spec_of(**PS_JOB)
    assert not tf.essential(spec, TaskKey(TENSORBOARD, 0))
    assert all(tf.essential(spec, TaskKey(role, 0)) for role in ("chief", "ps", "worker", "evaluator"))


def test_servers_are_the_ps_and_roles_without_a_command():
    spec = spec_of(ps={"count": 1}, worker={"count": 1, "server": True}, chief={"count": 1})
    assert {r.name: tf.is_server(r) for r in spec.roles if r.count} == {"ps": True, "worker": True, "chief": False}
    ps_with_command = dataclasses.replace(spec.role("ps"), command="python ps.py")
    assert tf.is_server(ps_with_command)


def test_the_cluster_is_tensorflows_clusterspec():
    endpoints = {TaskKey("worker", 1): "h:2", TaskKey("worker", 0): "h:1", TaskKey("ps", 0): "h:0"}
    assert tf.TENSORFLOW.cluster is cluster_spec
    assert tf.TENSORFLOW.cluster(endpoints) == {"ps": ["h:0"], "worker": ["h:1", "h:2"]}


def test_tensorflows_roles_come_in_its_clusterspec_order_and_tensorboard_after_them():
    assert tf.TENSORFLOW.role_order == ("chief", "ps", "worker", "evaluator")
    assert [tf.TENSORFLOW.rank(r) for r in ("chief", "ps", "worker", "evaluator", TENSORBOARD)] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("roles, success, found", [
    (PS_JOB, "chief", []),
    (dict(chief={"count": 1}), "chief", []),
    (dict(ps={"count": 1}), "chief", ["$.roles: no chief and no worker: expected at least one task to run the training"]),
    (dict(chief={"count": 1}), "worker0",
     ['$.policies.success: "worker0" needs workers: expected $.roles.worker.count >= 1']),
    (dict(ps={"count": 1}), "all_workers",
     ["$.roles: no chief and no worker: expected at least one task to run the training",
      '$.policies.success: "all_workers" needs workers: expected $.roles.worker.count >= 1']),
])
def test_what_tensorflow_cannot_train(roles, success, found):
    spec = spec_of(**PS_JOB)  # a valid spec, then the roles and policy under test (the options refuse them)
    role_specs = tuple(r for r in spec.roles if r.name in roles)
    spec = dataclasses.replace(spec, roles=role_specs, policies=dataclasses.replace(spec.policies, success=success))
    assert tf.problems(spec) == found and tf.TENSORFLOW.problems is tf.problems


# ---------------------------------------------------------------- the lifecycle asks the profile
def _under(profile, spec: JobSpec) -> JobSpec:
    """The same job under another profile: the spec is given its profile, it names none itself."""
    return dataclasses.replace(spec, profile=profile)


def _running(spec: JobSpec) -> tuple[Job, dict]:
    job = Job.new(spec, 0.0)
    launched = {t.key: t for a in job.offers([offer(0, cpus=16, mem=32768)], 0.0) if isinstance(a, act.Launch)
                for t in a.tasks}
    for t in launched.values():
        job.status(StatusUpdate(t.task_id, TaskState.TASK_RUNNING, agent_id="S0"), 0.0)
    return job, launched


def test_the_lifecycle_restarts_the_whole_job_only_where_the_profile_says():
    spec = spec_of(ps={"count": 1, "restart_policy": "OnFailure"}, worker={"count": 1}, chief={"count": 1})
    lone = _under(dataclasses.replace(tf.TENSORFLOW, restarts_whole_job=lambda spec, key: False), spec)
    for chosen, phase in ((spec, PLACING), (lone, RUNNING)):
        job, launched = _running(chosen)
        actions = job.status(StatusUpdate(launched[TaskKey("ps", 0)].task_id, TaskState.TASK_FAILED, exit_code=137), 1.0)
        assert job.phase == phase and bool([a for a in actions if isinstance(a, act.Kill)]) == (phase == PLACING)


def test_the_lifecycle_goes_on_without_a_task_the_profile_calls_inessential():
    spec = spec_of(worker={"count": 1}, evaluator={"count": 1})
    spare = _under(dataclasses.replace(tf.TENSORFLOW, essential=lambda spec, key: key.role != "evaluator"), spec)
    for chosen, phase in ((spec, FAILED), (spare, RUNNING)):
        job, launched = _running(chosen)
        job.status(StatusUpdate(launched[TaskKey("evaluator", 0)].task_id, TaskState.TASK_FAILED, exit_code=1), 1.0)
        assert job.phase in ((phase, "FINISHING") if phase == FAILED else (phase,))


def test_the_lifecycle_restarts_the_peers_the_profile_names_when_a_task_moves():
    spec = spec_of(worker={"count": 2, "restart_policy": "OnFailure", "server": True}, chief={"count": 1})
    # Collective: TensorFlow restarts the whole job; this profile relaunches alone, then restarts the chief.
    alone = dataclasses.replace(tf.TENSORFLOW, restarts_whole_job=lambda spec, key: False,
                                restart_when_moved=lambda spec, moved: (PeerRestart("chief", "a peer moved"),))
    job, launched = _running(_under(alone, spec))
    w1 = launched[TaskKey("worker", 1)]
    job.status(StatusUpdate(w1.task_id, TaskState.TASK_FAILED, reason="REASON_AGENT_REMOVED"), 1.0)  # relaunched elsewhere
    actions = job.offers([offer(1, cpus=16, mem=32768)], 60.0)
    killed = {a.task_id for a in actions if isinstance(a, act.Kill)}
    assert killed == {launched[TaskKey("chief", 0)].task_id}
    assert any("restarting from its checkpoint because a peer moved" in e for e in job.events)


def test_a_parameter_server_jobs_worker_relaunched_elsewhere_restarts_the_chief_alone():
    spec = spec_of(ps={"count": 1}, worker={"count": 2, "restart_policy": "OnFailure"}, chief={"count": 1})
    job, launched = _running(spec)
    w1 = launched[TaskKey("worker", 1)]
    job.status(StatusUpdate(w1.task_id, TaskState.TASK_FAILED, reason="REASON_AGENT_REMOVED"), 1.0)
    assert job.phase == RUNNING  # a worker alone: no whole-job restart
    actions = job.offers([offer(1, cpus=16, mem=32768)], 60.0)
    assert {a.task_id for a in actions if isinstance(a, act.Kill)} == {launched[TaskKey("chief", 0)].task_id}
    assert any("chief:0: restarting from its checkpoint because a worker moved" in e for e in job.events)


def test_the_lifecycle_lists_and_explains_tasks_in_the_profiles_role_order():
    spec = spec_of(ps={"count": 1, "cpus": 64}, worker={"count": 2, "cpus": 64}, chief={"count": 1, "cpus": 64})
    backwards = _under(dataclasses.replace(tf.TENSORFLOW, role_order=("worker", "ps", "chief")), spec)
    for chosen, order in ((spec, ["chief", "ps", "worker"]), (backwards, ["worker", "ps", "chief"])):
        job = Job.new(chosen, 0.0)
        job.offers([offer(0, cpus=4)], 0.0)
        roles = [t.role for t in job.snapshot().tasks]
        assert list(dict.fromkeys(roles)) == order and roles.count("worker") == 2
        cause = next(a for a in job.tick(spec.policies.placement_timeout_seconds + 1) if isinstance(a, act.Done)).cause
        assert sorted(order, key=lambda role: cause.index(f"{role}: ")) == order, cause


# ---------------------------------------------------------------- what is often a slip: a warning
SLIP = "every worker runs it as a second coordinator"


@pytest.mark.parametrize("roles, warned", [
    # ParameterServerStrategy's coordinator script (the job's command) on the chief and, by slip,
    # on the workers: each would be a second coordinator.
    (dict(ps={"count": 1}, chief={"count": 1}, worker={"count": 2}), True),
    # The tutorial's shape: the workers run TensorFlow's built-in server.
    (dict(ps={"count": 1}, chief={"count": 1}, worker={"count": 2, "server": True}), False),
    # Between-graph replication as tfrun and douban ran it: no chief, worker 0 leads.
    (dict(ps={"count": 1}, worker={"count": 2}), False),
    # Every task runs the script on purpose (TF1 between-graph with a chief, an Estimator): said
    # by the workers' own command, even the same one.
    (dict(ps={"count": 1}, chief={"count": 1}, worker={"count": 2, "command": "python train.py"}), False),
    # The chief runs a coordinator of its own; the workers the job's command.
    (dict(ps={"count": 1}, chief={"count": 1, "command": "python coordinate.py"}, worker={"count": 2}), False),
    # No parameter servers: MultiWorkerMirroredStrategy, where every worker runs the script.
    (dict(chief={"count": 1}, worker={"count": 2}), False),
    # The evaluator runs the script too (sidecar evaluation): not a coordinator.
    (dict(ps={"count": 1}, chief={"count": 1}, worker={"count": 1, "server": True}, evaluator={"count": 1}), False),
])
def test_workers_running_the_chiefs_script_beside_parameter_servers_are_warned_about(roles, warned):
    spec = spec_of(**roles)
    found = tf.warnings(spec)
    assert tf.TENSORFLOW.warnings is tf.warnings
    if not warned:
        assert found == []
        return
    (warning,) = found
    assert warning.startswith("$.roles.worker: the workers run $.job.command 'python train.py', as the chief does")
    assert SLIP in warning and "Could not start gRPC server" in warning
    assert 'set "server": true on $.roles.worker' in warning and 'give $.roles.worker a "command" of its own' in warning
