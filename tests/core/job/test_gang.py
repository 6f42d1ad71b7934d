"""Gang gathering and placement alone (core/job/gang.py), on a bare record and transient state."""
import random

from tfmesos.core import actions as act
from tfmesos.core.job import gang
from tfmesos.core.placement import offer_hold
from tfmesos.core.phase import PLACING, RUNNING
from tfmesos.core.task_state import PENDING
from tfmesos.core.placement.offer_hold import HOLD_SECONDS
from tfmesos.core.placement.offer_interest import REFUSE_WHEN_IDLE, REFUSE_WHILE_PENDING
from tfmesos.core.placement.queue import BEHIND_REFUSE_SECONDS

from tests.core.helpers import offer, spec_of, state_of


def of(kind, actions):
    return [a for a in actions if isinstance(a, kind)]


def test_a_gang_is_held_until_every_task_fits_then_launched_at_once():
    job, tr = state_of(spec_of(worker={"count": 2, "cpus": 1.5}))
    assert gang.offers(job, tr, [offer(0, cpus=2)], 1.0) == []
    assert set(tr.hold.held) == {"O0"} and tr.hold.held_since == 1.0 and job.phase == PLACING
    actions = gang.offers(job, tr, [offer(1, cpus=2), offer(2, cpus=0.1)], 3.0)
    (launch_a, launch_b) = of(act.Launch, actions)
    assert {launch_a.offer_id, launch_b.offer_id} == {"O0", "O1"}
    assert of(act.Decline, actions)[0] == act.Decline(("O2",), REFUSE_WHEN_IDLE)
    assert job.phase == RUNNING and not tr.hold.held and tr.placement_wait == 3.0
    assert [t.task_id for l in (launch_a, launch_b) for t in l.tasks] == ["t.worker.0.1", "t.worker.1.2"]
    assert {tid: str(key) for tid, key in job.by_task_id.items()} == {"t.worker.0.1": "worker:0", "t.worker.1.2": "worker:1"}
    assert of(act.Suppress, actions) and tr.interest.suppressed, "nothing waits: offers are suppressed"


def test_offers_that_help_no_task_go_back_at_once_with_the_short_filter():
    job, tr = state_of(spec_of(worker={"count": 2, "cpus": 3}))
    actions = gang.offers(job, tr, [offer(0, cpus=4), offer(1, cpus=1)], 0.0)
    assert actions == [act.Decline(("O1",), REFUSE_WHILE_PENDING)] and set(tr.hold.held) == {"O0"}
    assert tr.last_unplaced, "what could not be placed is kept for the explanation"


def test_a_job_behind_an_older_one_gives_back_what_it_holds_and_every_new_offer():
    job, tr = state_of(spec_of(worker={"count": 2, "cpus": 3}))
    gang.offers(job, tr, [offer(0, cpus=4)], 0.0)
    assert gang.wait_behind(job, tr, "older") == []
    actions = gang.offers(job, tr, [offer(1)], 1.0)
    assert actions == [act.Decline(("O0", "O1"), BEHIND_REFUSE_SECONDS)] and not tr.hold.held
    tr.interest.suppressed = True
    assert gang.wait_behind(job, tr, "") == [act.Revive()] and not tr.interest.suppressed


def test_the_largest_offer_seen_is_kept_for_the_explanation():
    job, tr = state_of(spec_of(worker={"count": 1, "cpus": 64}))
    gang.offers(job, tr, [offer(0, cpus=4), offer(1, cpus=8), offer(2, cpus=2)], 0.0)
    assert tr.largest_seen.id == "O1"
    why = gang.explain_unplaced(job, tr)
    assert "worker: 1 of 1 task(s) unplaced" in why and "largest offer seen: agent S1 (h1) cpus 8" in why


def test_hold_limits_are_jittered_around_the_base_hold():
    rng = random.Random(3)
    limits = set()
    for _ in range(20):
        hold = offer_hold.OfferHold()
        offer_hold.new_limit(hold, rng)
        limits.add(hold.hold_limit)
    assert len(limits) == 20 and all(HOLD_SECONDS * 0.5 <= h < HOLD_SECONDS * 1.5 for h in limits)


def test_pending_demand_and_held_totals_add_up_what_waits_and_what_is_held():
    job, tr = state_of(spec_of(worker={"count": 3, "cpus": 1, "mem": 100}))
    gang.offers(job, tr, [offer(0, cpus=1.5, mem=4096)], 0.0)
    demand = gang.pending_demand(job)
    assert demand["cpus"] > 3 and demand["mem"] > 300, "three tasks, each with its executor's share"
    assert offer_hold.totals(tr.hold) == {"cpus": 1.5, "mem": 4096}, "by name, what the offer has"
    offer_hold.rescind(tr.hold, "O0")
    assert offer_hold.totals(tr.hold) == {} and tr.hold.held_since == 0.0


def test_a_relaunch_waits_for_its_backoff_then_takes_the_first_offer_that_fits():
    job, tr = state_of(spec_of(worker={"count": 1}))
    gang.offers(job, tr, [offer(0)], 0.0)
    rec = job.tasks[next(iter(job.tasks))]
    rec.state, rec.not_before = PENDING, 10.0  # failed, backing off (core/job/recovery.py)
    assert gang.offers(job, tr, [offer(1)], 5.0)[0] == act.Decline(("O1",), REFUSE_WHILE_PENDING)
    assert tr.interest.declined_in_backoff, "the next tick revives to clear that filter"
    (launch,) = of(act.Launch, gang.offers(job, tr, [offer(2)], 11.0))
    assert launch.offer_id == "O2" and rec.state == "TASK_STAGING" and rec.task_id.endswith(".2")


def test_the_queue_notes_why_once_per_kind_and_keeps_when_it_started():
    job, tr = state_of(spec_of(worker={"count": 1}))
    gang.queue(job, tr, "waiting for room: free cpus 1", 1.0)
    gang.queue(job, tr, "waiting for room: free cpus 2", 2.0)
    assert tr.queued_since == 1.0 and tr.queued.endswith("cpus 2") and job.events == ["waiting for room: free cpus 1"]
