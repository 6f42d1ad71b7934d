"""The job lifecycle, driven by plain events (no Mesos, no processes)."""
from tfmesos.core import actions as act
from tfmesos.core.job.cluster_spec_sync import INLINE_MAX_ADDRESSES
from tfmesos.core.job.job import Job
from tfmesos.core.phase import FAILED, PLACING, RUNNING, SUCCEEDED
from tfmesos.core.task_state import StatusUpdate, TaskState
from tfmesos.core.spec import TaskKey

from tests.core.helpers import offer, spec_of

PSS = dict(
    ps={"count": 1},
    worker={"count": 2, "server": True, "restart_policy": "OnFailure", "max_restarts": 2},
    chief={"count": 1},
)


def of(kind, actions):
    return [a for a in actions if isinstance(a, kind)]


def launch_all(job, now=0.0, offers=None):
    actions = job.offers(offers or [offer(0, cpus=8, mem=16384)], now)
    launched = {t.key: t for l in of(act.Launch, actions) for t in l.tasks}
    return actions, launched


def run_all(job, launched, now=0.0):
    """Every executor reports STARTING then RUNNING; returns the ClusterSpec messages sent."""
    sent = []
    for t in launched.values():
        sent += of(act.SendClusterSpec, job.status(StatusUpdate(t.task_id, TaskState.TASK_STARTING, agent_id="S0"), now))
        job.status(StatusUpdate(t.task_id, TaskState.TASK_RUNNING, agent_id="S0"), now)
    return sent


def test_a_small_gangs_launch_carries_the_spec_each_task_has_it_once():
    job = Job.new(spec_of(**PSS), 0.0)
    actions, launched = launch_all(job)
    assert len(launched) == 4 and job.phase == RUNNING
    assert of(act.Suppress, actions), "nothing pending: offers are suppressed"
    assert not of(act.SendClusterSpec, actions), "no executor is subscribed at launch: none to tell"
    (launch,) = of(act.Launch, actions)
    assert launch.cluster_spec is job.cluster_spec_message() and launch.cluster_spec["version"] == job.cluster_spec_version
    assert all(r.cluster_spec_version_sent == job.cluster_spec_version for r in job.tasks.values())
    assert run_all(job, launched) == [], "each executor had the spec in its TaskInfo: none sent as they report"
    cluster = launch.cluster_spec["cluster"]
    assert sorted(cluster) == ["chief", "ps", "worker"] and len(cluster["worker"]) == 2
    assert len({addr for addrs in cluster.values() for addr in addrs}) == 4, "every task has its own port"


def test_a_big_gangs_launch_carries_no_spec_each_executor_asks_for_it_once():
    count = INLINE_MAX_ADDRESSES + 1
    job = Job.new(spec_of(worker={"count": count, "cpus": 0.1, "mem": 32}), 0.0)
    actions, launched = launch_all(job, offers=[offer(0, cpus=100, mem=65536, ports=((31000, 31999),))])
    assert len(launched) == count and job.phase == RUNNING
    assert [l.cluster_spec for l in of(act.Launch, actions)] == [None], "no ClusterSpec in a big gang's TaskInfos"
    assert all(r.cluster_spec_version_sent == 0 for r in job.tasks.values())
    answers = [a for t in launched.values() for a in job.executor_asks_cluster_spec(t.task_id)]
    assert sorted(a.task_id for a in answers) == sorted(t.task_id for t in launched.values())
    assert len({id(a.message) for a in answers}) == 1, "one message per version, built once"
    assert answers[0].message["version"] == job.cluster_spec_version
    assert run_all(job, launched) == [], "each executor had the spec: none sent again as they report"
    assert len(answers[0].message["cluster"]["worker"]) == count


def test_partial_gang_holds_only_useful_offers_then_completes():
    job = Job.new(spec_of(worker={"count": 3, "cpus": 1.5}), 0.0)
    actions = job.offers([offer(0, cpus=2), offer(1, cpus=0.05)], 0.0)
    assert not of(act.Launch, actions)
    assert of(act.Decline, actions)[0].offer_ids == ("O1",), "an offer that helps nothing is given back"
    assert set(job.transient.hold.held) == {"O0"}
    actions = job.offers([offer(2, cpus=4)], 1.0)
    launches = of(act.Launch, actions)
    assert sum(len(l.tasks) for l in launches) == 3
    assert {l.offer_id for l in launches} == {"O0", "O2"} and not job.transient.hold.held


def test_held_offers_are_released_after_the_hold_limit():
    job = Job.new(spec_of(worker={"count": 3, "cpus": 1.5}), 0.0)
    job.offers([offer(0, cpus=2)], 0.0)
    assert job.transient.hold.held
    actions = job.tick(job.transient.hold.hold_limit + 0.1)
    assert of(act.Decline, actions) and not job.transient.hold.held


def test_placement_timeout_fails_with_the_reason():
    spec = spec_of(worker={"count": 2, "cpus": 64})
    job = Job.new(spec, 0.0)
    job.offers([offer(0, cpus=4)], 0.0)
    actions = job.tick(spec.policies.placement_timeout_seconds + 1)
    done = of(act.Done, actions)
    assert done and not done[0].succeeded and job.phase == FAILED
    assert "worker: 2 of 2 task(s) unplaced" in done[0].cause and "cpus 64.1" in done[0].cause
    assert "largest offer seen: agent S0" in done[0].cause


def test_chief_success_kills_the_servers_and_ends_when_they_are_gone():
    job = Job.new(spec_of(**PSS), 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    actions = job.status(StatusUpdate(launched[TaskKey("chief", 0)].task_id, TaskState.TASK_FINISHED, exit_code=0), 5.0)
    killed = {k.task_id for k in of(act.Kill, actions)}
    assert killed == {t.task_id for k, t in launched.items() if k.role != "chief"}
    assert not of(act.Done, actions)
    for tid in killed:
        actions = job.status(StatusUpdate(tid, TaskState.TASK_KILLED), 6.0)
    assert of(act.Done, actions)[0].succeeded and job.phase == SUCCEEDED


def test_worker_failure_relaunches_it_alone_at_the_same_address():
    job = Job.new(spec_of(**PSS), 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    w1 = launched[TaskKey("worker", 1)]
    actions = job.status(StatusUpdate(w1.task_id, TaskState.TASK_FAILED, exit_code=137, agent_id="S0"), 10.0)
    assert not of(act.Kill, actions), "the rest keeps running"
    assert job.tasks[TaskKey("worker", 1)].state == "PENDING"
    # Backoff: not before 10 + 1 s; meanwhile offers are refused only briefly.
    actions = job.offers([offer(5)], 10.5)
    assert not of(act.Launch, actions) and of(act.Decline, actions)[0].refuse_seconds <= 5
    assert of(act.Revive, job.tick(11.2)), "backoff over: the refused offers are asked back at once"
    assert not of(act.Revive, job.tick(11.3))
    actions = job.offers([offer(0, cpus=8, ports=((31000, 31099),))], 11.5)
    (relaunch,) = [t for l in of(act.Launch, actions) for t in l.tasks]
    assert relaunch.key == TaskKey("worker", 1) and relaunch.port == w1.port and relaunch.task_id != w1.task_id
    assert relaunch.restarts == 1
    version = job.cluster_spec_version
    assert version == 1, "same host:port: the ClusterSpec did not change"
    assert "worker:1" in job.events[-1]


def test_updates_of_an_old_attempt_are_ignored_and_it_is_killed_if_alive():
    job = Job.new(spec_of(**PSS), 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    w0 = launched[TaskKey("worker", 0)]
    job.status(StatusUpdate(w0.task_id, TaskState.TASK_FAILED, exit_code=1, agent_id="S0"), 1.0)
    actions = job.status(StatusUpdate(w0.task_id, TaskState.TASK_RUNNING, agent_id="S0"), 1.1)
    assert of(act.Kill, actions)[0].task_id == w0.task_id
    assert job.tasks[TaskKey("worker", 0)].state == "PENDING"


def test_lost_parameter_server_restarts_the_whole_job():
    spec = spec_of(ps={"count": 1, "restart_policy": "OnFailure"}, worker={"count": 2, "server": True}, chief={"count": 1})
    job = Job.new(spec, 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    ps = launched[TaskKey("ps", 0)]
    actions = job.status(StatusUpdate(ps.task_id, TaskState.TASK_FAILED, exit_code=137, agent_id="S0"), 5.0)
    killed = {k.task_id for k in of(act.Kill, actions)}
    assert killed == {t.task_id for k, t in launched.items() if k.role != "ps"}
    assert job.phase == PLACING
    assert not of(act.Launch, job.offers([offer(1, cpus=8, mem=16384)], 9.0)), "old generation still alive"
    for tid in killed:
        job.status(StatusUpdate(tid, TaskState.TASK_KILLED), 7.0)
    _, relaunched = launch_all(job, now=9.0)
    assert set(relaunched) == set(launched) and job.phase == RUNNING


def test_collective_worker_failure_restarts_all_workers():
    spec = spec_of(worker={"count": 2, "restart_policy": "OnFailure"})
    job = Job.new(spec, 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    w0, w1 = launched[TaskKey("worker", 0)], launched[TaskKey("worker", 1)]
    actions = job.status(StatusUpdate(w1.task_id, TaskState.TASK_FAILED, exit_code=1), 3.0)
    assert [k.task_id for k in of(act.Kill, actions)] == [w0.task_id]


def test_exit_code_policy_permanent_vs_retryable():
    spec = spec_of(chief={"count": 1, "restart_policy": "ExitCode", "max_restarts": 2})
    job = Job.new(spec, 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    actions = job.status(StatusUpdate(launched[TaskKey("chief", 0)].task_id, TaskState.TASK_FAILED, exit_code=1), 1.0)
    done = of(act.Done, actions)
    assert done and "exit code 1 is permanent" in done[0].cause and job.tasks[TaskKey("chief", 0)].restarts == 0

    job = Job.new(spec, 0.0)
    now = 0.0
    for attempt in range(3):
        _, launched = launch_all(job, now)
        run_all(job, launched, now)
        actions = job.status(StatusUpdate(launched[TaskKey("chief", 0)].task_id, TaskState.TASK_FAILED, exit_code=137), now)
        now += 100
    done = of(act.Done, actions)
    assert done and "max_restarts 2" in done[0].cause and job.tasks[TaskKey("chief", 0)].restarts == 2


def test_task_error_is_never_retried():
    job = Job.new(spec_of(worker={"count": 1, "restart_policy": "Always"}), 0.0)
    _, launched = launch_all(job)
    actions = job.status(StatusUpdate(launched[TaskKey("worker", 0)].task_id, TaskState.TASK_ERROR, reason="REASON_TASK_INVALID"), 0.5)
    assert of(act.Done, actions) and "TASK_ERROR" in job.cause


def test_startup_timeout_counts_as_a_failure():
    spec = spec_of(worker={"count": 1})
    job = Job.new(spec, 0.0)
    _, launched = launch_all(job)
    actions = job.tick(spec.policies.startup_timeout_seconds + 1)
    assert of(act.Kill, actions)[0].task_id == launched[TaskKey("worker", 0)].task_id
    assert job.phase in ("FINISHING", FAILED) and "startup timeout" in job.cause


def test_a_startup_timeout_is_retryable_under_exit_code_as_the_infrastructure_is():
    spec = spec_of(worker={"count": 1, "restart_policy": "ExitCode"})
    job = Job.new(spec, 0.0)
    launch_all(job)
    job.tick(spec.policies.startup_timeout_seconds + 1)
    rec = job.tasks[TaskKey("worker", 0)]
    assert (rec.state, rec.restarts, job.phase) == ("PENDING", 1, PLACING)  # a collective worker: the whole job
    assert "startup timeout" in rec.message  # for a person; the decision comes from the update's kind


def test_a_reported_end_whose_text_mentions_a_startup_timeout_is_no_startup_timeout():
    # The kind of end is data: a training script's own "startup timeout" (exit 1) stays permanent.
    spec = spec_of(worker={"count": 1, "restart_policy": "ExitCode"})
    job = Job.new(spec, 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    update = StatusUpdate(launched[TaskKey("worker", 0)].task_id, TaskState.TASK_FAILED, exit_code=1,
                          message="startup timeout: the data loader never answered")
    done = of(act.Done, job.status(update, 1.0))
    assert done and "exit code 1 is permanent" in done[0].cause


def test_agent_loss_relaunches_elsewhere():
    spec = spec_of(ps={"count": 1}, worker={"count": 1, "server": True, "restart_policy": "OnFailure"}, chief={"count": 1})
    job = Job.new(spec, 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    w = launched[TaskKey("worker", 0)]
    job.status(StatusUpdate(w.task_id, TaskState.TASK_LOST, reason="REASON_AGENT_REMOVED_BY_OPERATOR", agent_id="S0"), 1.0)
    actions = job.offers([offer(0), offer(1)], 5.0)
    (l,) = of(act.Launch, actions)
    assert l.agent_id == "S1", "not back on the agent that was lost"
    # A worker at a new address: the running chief does not know it, so it restarts too.
    assert [k.task_id for k in of(act.Kill, actions)] == [launched[TaskKey("chief", 0)].task_id]
    assert job.cluster_spec_version == 2


def test_active_deadline():
    spec = spec_of(worker={"count": 1}, )
    spec = type(spec)(**{**spec.__dict__, "policies": type(spec.policies)(active_deadline_seconds=10)})
    job = Job.new(spec, 0.0)
    launch_all(job)
    assert not of(act.Done, job.tick(9.0))
    job.tick(10.0)
    assert "active_deadline_seconds" in job.cause


def test_state_round_trip_keeps_task_ids_and_reconciles():
    spec = spec_of(**PSS)
    job = Job.new(spec, 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    again = Job.from_dict(spec, job.to_dict())
    assert again.snapshot().tasks == job.snapshot().tasks
    start = again.start()
    reconciled = [a for a in start if isinstance(a, act.Reconcile)]
    assert set(reconciled[0].task_ids) == {t.task_id for t in launched.values()}
    assert reconciled[1].task_ids == ()
    # The restored job goes on numbering task ids after the old ones: none is reused.
    chief = launched[TaskKey("chief", 0)]
    again.status(StatusUpdate(launched[TaskKey("worker", 0)].task_id, TaskState.TASK_FAILED, exit_code=1, agent_id="S0"), 1.0)
    _, relaunched = launch_all(again, now=10.0)
    assert relaunched[TaskKey("worker", 0)].task_id not in {t.task_id for t in launched.values()}
    assert again.key_of(chief.task_id) == TaskKey("chief", 0)


def test_a_peer_relaunched_at_a_new_address_asks_for_the_spec_the_others_get_it_by_message():
    job = Job.new(spec_of(**PSS), 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    worker = launched[TaskKey("worker", 0)]
    job.status(StatusUpdate(worker.task_id, TaskState.TASK_FAILED, agent_id="S0"), 1.0)
    actions = job.offers([offer(1, cpus=8, mem=16384)], 100.0)
    (launch,) = of(act.Launch, actions)
    (relaunched,) = launch.tasks
    messaged = {a.task_id for a in of(act.SendClusterSpec, actions)}
    others = {t.task_id for k, t in launched.items() if k != worker.key}
    assert messaged == others, "running peers learn the new address by framework message"
    (answer,) = job.executor_asks_cluster_spec(relaunched.task_id)
    assert answer.message["version"] == job.cluster_spec_version > 0
    assert answer.message["cluster"]["worker"][0] == f"h1:{relaunched.port}", "the new address"


def test_the_core_marks_what_must_be_durable_before_mesos_hears_of_it():
    job = Job.new(spec_of(**PSS), 0.0)
    assert isinstance(job.start()[0], act.Persist)
    actions, launched = launch_all(job)
    assert isinstance(actions[0], act.Persist), "task ids are written before the launch"
    worker = launched[TaskKey("worker", 0)]
    running = job.status(StatusUpdate(worker.task_id, TaskState.TASK_RUNNING, agent_id="S0"), 1.0)
    assert not of(act.Persist, running), "RUNNING is learnt again by reconciliation: no write"
    assert not of(act.Persist, job.executor_asks_cluster_spec(worker.task_id))
    failed = job.status(StatusUpdate(worker.task_id, TaskState.TASK_FAILED, agent_id="S0"), 2.0)
    assert failed and isinstance(failed[0], act.Persist), "a task's end is durable"
    assert isinstance(job.abort("stop", 3.0)[0], act.Persist)


def test_all_workers_success_waits_for_every_worker_through_a_whole_job_restart():
    from tfmesos.options.load import resolve_options
    from tfmesos.options.jobspec import job_spec_from_options

    spec = job_spec_from_options(resolve_options({
        "service": {"name": "t"}, "job": {"command": "python train.py"}, "policies": {"success": "all_workers"},
        "roles": {"ps": {"count": 1, "restart_policy": "OnFailure"}, "worker": {"count": 3}}}))
    job = Job.new(spec, 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    workers = [TaskKey("worker", i) for i in range(3)]
    job.status(StatusUpdate(launched[workers[0]].task_id, TaskState.TASK_FINISHED, exit_code=0), 1.0)
    assert job.phase == RUNNING
    # The ps dies: the whole job restarts, worker:0's finish included in what is undone.
    ps = launched[TaskKey("ps", 0)]
    for a in of(act.Kill, job.status(StatusUpdate(ps.task_id, TaskState.TASK_FAILED, exit_code=137), 2.0)):
        job.status(StatusUpdate(a.task_id, TaskState.TASK_KILLED), 3.0)
    _, relaunched = launch_all(job, now=9.0)
    run_all(job, relaunched, 9.0)
    order = [k for k in (workers[1], workers[2], workers[0]) if k in relaunched]
    for n, key in enumerate(order, 1):
        job.status(StatusUpdate(relaunched[key].task_id, TaskState.TASK_FINISHED, exit_code=0), 10.0 + n)
        every = all(job.tasks[w].state == "TASK_FINISHED" for w in workers)
        assert (job.phase != RUNNING) == every, (key, job.phase, {w: job.tasks[w].state for w in workers})
    assert job.succeeded
    assert job.cause == "all 3 workers finished", "the cause says the success rule, not the last worker alone"
    assert job.end_note() == "succeeded: all 3 workers finished" and job.end_note() in job.events


def test_the_success_cause_names_the_tasks_the_rule_counts():
    from tfmesos.core.job.finishing import success_cause

    assert success_cause([TaskKey("chief", 0)]) == "chief:0 finished"
    assert success_cause([TaskKey("worker", i) for i in range(2)]) == "all 2 workers finished"
    assert success_cause([TaskKey("chief", 0), TaskKey("worker", 0), TaskKey("worker", 1)]) == \
        "chief:0 and 2 workers finished"


def test_a_launch_that_never_reached_an_agent_is_placed_again_under_never():
    """A gang's ACCEPT on a stream that had just dropped is refused; after re-subscribing, Mesos says
    TASK_LOST (REASON_INVALID_OFFERS, or REASON_RECONCILIATION for a task it never saw): no process
    ran, so the default policy Never does not fail the job, and the task's restarts stay 0."""
    job = Job.new(spec_of(ps={"count": 1}, worker={"count": 1}, chief={"count": 1}), 0.0)
    _, launched = launch_all(job)
    assert job.spec.role("worker").restart_policy == "Never"
    w0, chief = launched[TaskKey("worker", 0)], launched[TaskKey("chief", 0)]
    job.status(StatusUpdate(w0.task_id, TaskState.TASK_LOST, reason="REASON_RECONCILIATION"), 5.0)
    job.status(StatusUpdate(chief.task_id, TaskState.TASK_LOST, reason="REASON_INVALID_OFFERS"), 5.0)
    assert job.phase != FAILED, job.events[-3:]
    for key in (TaskKey("worker", 0), TaskKey("chief", 0)):
        assert job.tasks[key].state == "PENDING" and job.tasks[key].restarts == 0
    assert "its launch never reached an agent" in job.events[-1]
    actions = job.offers([offer(1, cpus=8, mem=16384)], 10.0)
    placed = {t.key for l in of(act.Launch, actions) for t in l.tasks}
    assert placed == {TaskKey("worker", 0), TaskKey("chief", 0)}


def test_a_task_lost_after_it_ran_still_fails_the_job_under_never():
    job = Job.new(spec_of(ps={"count": 1}, worker={"count": 1}, chief={"count": 1}), 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    w0 = launched[TaskKey("worker", 0)]
    job.status(StatusUpdate(w0.task_id, TaskState.TASK_LOST, reason="REASON_RECONCILIATION"), 5.0)
    assert job.phase in (FAILED, "FINISHING") and job.succeeded is False and "restart policy Never" in job.cause


def test_reconciliation_is_asked_again_with_backoff_for_the_tasks_mesos_has_not_answered_about():
    """After a master failover Mesos answers nothing for an agent that has not re-registered: the
    tasks there are asked about again (15 s, then 30 s, ...) until an update answers for each."""
    job = Job.new(spec_of(ps={"count": 1}, worker={"count": 1}, chief={"count": 1}), 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    ids = sorted(t.task_id for t in launched.values())
    explicit, implicit = of(act.Reconcile, job.start())
    assert sorted(explicit.task_ids) == ids and implicit == act.Reconcile(())
    assert not of(act.Reconcile, job.tick(100.0)), "the first tick only sets the clock"
    assert not of(act.Reconcile, job.tick(110.0))
    chief = launched[TaskKey("chief", 0)].task_id
    job.status(StatusUpdate(chief, TaskState.TASK_RUNNING, reason="REASON_RECONCILIATION"), 112.0)
    (again,) = of(act.Reconcile, job.tick(115.0))
    assert sorted(again.task_ids) == sorted(t for t in ids if t != chief)
    assert not of(act.Reconcile, job.tick(140.0)), "backoff: 30 s after the second ask"
    assert of(act.Reconcile, job.tick(145.0))
    for task_id in again.task_ids:
        job.status(StatusUpdate(task_id, TaskState.TASK_RUNNING, reason="REASON_RECONCILIATION"), 150.0)
    assert not of(act.Reconcile, job.tick(1000.0)), "every task answered: no more asks"
