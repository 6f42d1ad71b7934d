"""Which task gets which ClusterSpec, alone (core/job/cluster_spec_sync.py)."""
from tfmesos.core import actions as act
from tfmesos.core.job import cluster_spec_sync, gang
from tfmesos.core.spec import TaskKey
from tfmesos.core.state import tasks

from tests.core.helpers import offer, spec_of, state_of


def test_no_spec_before_every_address_is_known_then_one_message_per_version():
    job, tr = state_of(spec_of(worker={"count": 2}))
    assert cluster_spec_sync.cluster(job) is None and cluster_spec_sync.cluster_spec_message(job, tr) is None
    gang.offers(job, tr, [offer(0, cpus=16, mem=65536)], 0.0)
    first = cluster_spec_sync.cluster_spec_message(job, tr)
    assert first["cluster"] == {"worker": ["h0:31000", "h0:31001"]}
    assert cluster_spec_sync.cluster_spec_message(job, tr) is first, "built once per version"
    job.cluster_spec_version += 1
    assert cluster_spec_sync.cluster_spec_message(job, tr) is not first


def test_only_reported_tasks_behind_the_version_are_sent_it():
    job, tr = state_of(spec_of(worker={"count": 2}))
    gang.offers(job, tr, [offer(0, cpus=16, mem=65536)], 0.0)
    w0, w1 = job.tasks[TaskKey("worker", 0)], job.tasks[TaskKey("worker", 1)]
    job.cluster_spec_version += 1  # a peer moved
    assert cluster_spec_sync.sync_cluster_specs(job, tr) == [], "STAGING tasks have no executor to tell yet"
    w0.state = "TASK_RUNNING"
    (sent,) = cluster_spec_sync.sync_cluster_specs(job, tr)
    assert sent.task_id == w0.task_id and w0.cluster_spec_version_sent == job.cluster_spec_version
    assert cluster_spec_sync.sync_cluster_specs(job, tr, only=w1) == []


def test_an_executor_asking_again_is_answered_unless_it_runs_an_old_attempt():
    job, tr = state_of(spec_of(worker={"count": 1}))
    gang.offers(job, tr, [offer(0)], 0.0)
    (answer,) = cluster_spec_sync.executor_asks_cluster_spec(job, tr, "t.worker.0.1")
    assert isinstance(answer, act.SendClusterSpec) and answer.agent_id == "S0"
    assert cluster_spec_sync.executor_asks_cluster_spec(job, tr, "t.worker.0.0") == []



def test_an_executor_answered_before_a_peer_moved_gets_the_newer_version_once_it_reports():
    """Two relaunches: the first one's executor asks and is answered (version 2), then the second
    task moves (version 3) while the first is STAGING (not told: it may not be subscribed yet);
    its TASK_RUNNING brings it version 3."""
    job, tr = state_of(spec_of(worker={"count": 2}))
    gang.offers(job, tr, [offer(0, cpus=16, mem=65536)], 0.0)
    w0, w1 = job.tasks[TaskKey("worker", 0)], job.tasks[TaskKey("worker", 1)]
    w0.state = w1.state = "TASK_RUNNING"
    tasks.launch(job, w0, "S1", "h1", 31005, 1.0)
    cluster_spec_sync.addresses_changed(job)
    assert [a.task_id for a in cluster_spec_sync.sync_cluster_specs(job, tr)] == [w1.task_id]
    (answer,) = cluster_spec_sync.executor_asks_cluster_spec(job, tr, w0.task_id)
    assert answer.message["version"] == 2 and answer.message["cluster"]["worker"] == ["h1:31005", "h0:31001"]
    tasks.launch(job, w1, "S2", "h2", 31006, 2.0)
    cluster_spec_sync.addresses_changed(job)
    assert cluster_spec_sync.sync_cluster_specs(job, tr) == [], "both STAGING: their executors ask"
    w0.state = "TASK_RUNNING"
    (newer,) = cluster_spec_sync.sync_cluster_specs(job, tr, only=w0)
    assert newer.message["version"] == 3 and newer.message["cluster"]["worker"] == ["h1:31005", "h2:31006"]


def _gang(count: int):
    job, tr = state_of(spec_of(worker={"count": count, "cpus": 0.1, "mem": 32}))
    actions = gang.offers(job, tr, [offer(0, cpus=100, mem=65536, ports=((31000, 31999),))], 0.0)
    return job, tr, [a for a in actions if isinstance(a, act.Launch)]


def test_a_gang_of_at_most_the_threshold_carries_the_spec_one_address_more_asks():
    job, tr, (launch,) = _gang(cluster_spec_sync.INLINE_MAX_ADDRESSES)
    assert launch.cluster_spec is cluster_spec_sync.cluster_spec_message(job, tr)
    assert cluster_spec_sync.address_count(launch.cluster_spec) == cluster_spec_sync.INLINE_MAX_ADDRESSES
    assert {r.cluster_spec_version_sent for r in job.tasks.values()} == {job.cluster_spec_version}
    job, tr, (launch,) = _gang(cluster_spec_sync.INLINE_MAX_ADDRESSES + 1)
    assert launch.cluster_spec is None
    assert {r.cluster_spec_version_sent for r in job.tasks.values()} == {0}, "each executor asks: none marked"


def test_a_task_that_carried_the_spec_is_still_sent_a_newer_one_and_answered_if_it_asks():
    job, tr = state_of(spec_of(worker={"count": 2}))
    (launch,) = [a for a in gang.offers(job, tr, [offer(0, cpus=16, mem=65536)], 0.0) if isinstance(a, act.Launch)]
    w0, w1 = job.tasks[TaskKey("worker", 0)], job.tasks[TaskKey("worker", 1)]
    assert launch.cluster_spec["version"] == w0.cluster_spec_version_sent == w1.cluster_spec_version_sent == 1
    w0.state = "TASK_RUNNING"
    assert cluster_spec_sync.sync_cluster_specs(job, tr) == [], "it has this version: not sent again"
    (answer,) = cluster_spec_sync.executor_asks_cluster_spec(job, tr, w1.task_id)  # an older executor asks
    assert answer.message is launch.cluster_spec
    # w1 fails and is relaunched elsewhere: its new TaskInfo carries version 2, and w0 is sent it.
    w1.state = "TASK_FAILED"
    tasks.requeue(w1, 0.0, avoid=True)
    actions = gang.offers(job, tr, [offer(1, cpus=16, mem=65536)], 1.0)
    (relaunch,) = [a for a in actions if isinstance(a, act.Launch)]
    assert relaunch.cluster_spec["version"] == 2 and relaunch.cluster_spec["cluster"]["worker"] == ["h0:31000", "h1:31000"]
    assert w1.cluster_spec_version_sent == 2
    (sent,) = [a for a in actions if isinstance(a, act.SendClusterSpec)]
    assert (sent.task_id, sent.message) == (w0.task_id, relaunch.cluster_spec), "the running peer hears of the move"
