"""A job that fits but finds no room waits queued: attempts, the queue timeout, the aging hold."""
from tfmesos.core import actions as act
from tfmesos.core.job.job import Job
from tfmesos.core.phase import FAILED, PLACING
from tfmesos.core.placement.queue import HOLD_MAX_SECONDS, hold_limit, queue_timed_out

from tests.core.helpers import offer, spec_of


def placing_job(**policies):
    spec = spec_of(worker={"count": 2, "cpus": 0.5})
    if policies:
        import dataclasses
        spec = dataclasses.replace(spec, policies=dataclasses.replace(spec.policies, **policies))
    return Job.new(spec, 0.0)


def test_an_unqueued_job_still_fails_at_its_placement_timeout():
    job = placing_job(placement_timeout_seconds=10)
    job.offers([offer(0, cpus=0.6)], 0.0)
    job.tick(10.0)
    assert job.phase != PLACING and job.ending == FAILED and "placement_timeout_seconds" in job.cause


def test_a_queued_job_starts_a_new_attempt_at_the_placement_timeout_and_says_so_once():
    job = placing_job(placement_timeout_seconds=10)
    job.offers([offer(0, cpus=0.6)], 0.0)
    job.queue("queued (the cluster fits the job, but not now): needs cpus 1.2", 1.0)
    job.queue("queued (the cluster fits the job, but not now): needs cpus 1.2; free cpus 0.2", 3.0)
    assert sum(e.startswith("queued") for e in job.events) == 1, "the console hears it once, not every probe"
    for now in (10.0, 20.0, 30.0, 400.0):
        job.tick(now)
    assert job.phase == PLACING and job.transient.queued_since == 1.0
    snap = job.snapshot()
    assert snap.queued.endswith("free cpus 0.2") and snap.queued_since == 1.0
    actions = job.offers([offer(1, cpus=2)], 401.0)
    assert any(isinstance(a, act.Launch) for a in actions)
    assert job.transient.queued == "" and job.transient.queued_since is None and job.transient.placement_wait == 400.0


def test_the_queue_timeout_bounds_the_wait():
    job = placing_job(placement_timeout_seconds=10, queue_timeout_seconds=60)
    job.queue("queued (the cluster fits the job, but not now): needs cpus 1", 2.0)
    assert job.next_deadline(30.0) <= 62.0
    job.tick(61.0)
    assert job.phase == PLACING
    job.tick(62.0)
    assert job.ending == FAILED and "queue_timeout_seconds (60s)" in job.cause
    assert queue_timed_out(None, 1e9, 60) is None and queue_timed_out(0.0, 1e9, 0) is None


def test_a_queued_gang_holds_its_partial_offers_longer_as_it_ages_within_a_bound():
    assert hold_limit(8.0, 0.0) == 8.0
    assert hold_limit(8.0, 40.0) == 18.0
    assert hold_limit(8.0, 10_000.0) == HOLD_MAX_SECONDS
    job = placing_job(placement_timeout_seconds=1000)
    job.queue("queued (the cluster fits the job, but not now): needs cpus 1", 0.0)
    job.offers([offer(0, cpus=0.6)], 100.0)  # one task's worth held
    assert job.transient.hold.held
    job.tick(100.0 + job.transient.hold.hold_limit + 1)
    assert job.transient.hold.held, "an aged gang keeps its partial placement past the base hold"
    job.tick(100.0 + HOLD_MAX_SECONDS + 0.1)
    assert not job.transient.hold.held, "but gives it back within HOLD_MAX_SECONDS"


def test_a_job_waits_behind_an_older_tfmesos_job_still_being_placed_for_a_bounded_time():
    from tfmesos.core.placement.fit import Framework
    from tfmesos.core.placement.queue import YIELD_MAX_SECONDS, older_waiting

    gang = Framework("F1", "gang", "*", {}, registered=1.0, placing=True)
    me = Framework("F2", "small", "*", {}, registered=2.0, placing=True)
    younger = Framework("F3", "younger", "*", {}, registered=3.0, placing=True)
    running = Framework("F0", "running", "*", {"cpus": 1}, registered=0.5, placing=False)
    seen: dict = {}
    assert older_waiting("F2", [running, younger, me, gang], 10.0, seen) == "gang"
    assert older_waiting("F1", [running, younger, me, gang], 10.0, {}) is None, "the oldest waits behind no one"
    assert older_waiting("F2", [running, younger, me], 10.0, {}) is None, "a placed job holds up no one"
    assert older_waiting("F2", [me, gang], 10.0 + YIELD_MAX_SECONDS, seen) is None, "bounded"
    assert older_waiting("F9", [me, gang], 10.0, {}) is None, "not in the state yet: no wait"


def test_a_job_behind_an_older_one_gives_its_offers_back():
    job = placing_job()
    job.offers([offer(0, cpus=0.6)], 0.0)
    assert job.transient.hold.held
    assert job.wait_behind("gang") == []
    actions = job.offers([offer(1, cpus=4)], 1.0)
    assert not any(isinstance(a, act.Launch) for a in actions) and not job.transient.hold.held
    (decline,) = [a for a in actions if isinstance(a, act.Decline)]
    assert set(decline.offer_ids) == {"O0", "O1"}
    assert job.wait_behind("") == [act.Revive()], "the filters of the offers given back are cleared"
    assert any(isinstance(a, act.Launch) for a in job.offers([offer(2, cpus=4)], 2.0))
