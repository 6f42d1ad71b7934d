"""Maintenance windows in the core: an inverse offer for a machine the job runs on moves its tasks
at a checkpoint once the window is within the margin (and not before), a machine the job does not
use is given back at once, a rescinded inverse offer is forgotten, and placement never uses a
machine whose window is open or near, and puts machines with a window in the job's run last."""
from __future__ import annotations

from tfmesos.core import actions as act
from tfmesos.core.job.job import Job
from tfmesos.core.phase import RUNNING
from tfmesos.core.placement.maintenance import InverseOffer, Window, preferred, usable
from tfmesos.core.spec import TaskKey
from tfmesos.core.task_state import StatusUpdate, TaskState

from tests.core.helpers import offer, spec_of
from tests.core.job.test_job import of

MWMS = dict(worker={"count": 2, "cpus": 1, "mem": 1024, "max_restarts": 0})
W0, W1 = TaskKey("worker", 0), TaskKey("worker", 1)


def test_a_window_is_near_within_the_margin_and_until_it_closes():
    window = Window(start=1000.0, duration=600.0)
    assert not window.near(699.0, 300) and window.near(700.0, 300) and window.near(1500.0, 300)
    assert not window.near(1600.0, 300) and window.open(1000.0) and not window.open(999.0)
    assert Window(1000.0).near(10**9, 300), "no duration: unavailable until further notice"
    assert window.describe(942.0) == "opens in 58 s" and window.describe(1000.0) == "open (10 min left)"


def test_placement_skips_machines_in_or_near_a_window_and_prefers_those_without_one():
    free, later, soon = offer(0), offer(1), offer(2)
    later = type(later)(**{**vars(later), "unavailability": Window(5000.0, 600.0)})
    soon = type(soon)(**{**vars(soon), "unavailability": Window(200.0, 600.0)})
    assert [usable(o, 0.0, 300) for o in (free, later, soon)] == [True, True, False]
    assert preferred([later, free], 0.0, expected_end=None) == [free, later]
    assert preferred([later, free], 0.0, expected_end=4000.0) == [later, free], "its window is after the run"


def running():
    job = Job.new(spec_of(**MWMS), 0.0)
    actions = job.offers([offer(0, cpus=2, mem=2048), offer(1, cpus=2, mem=2048)], 0.0)
    launched = {t.key: (t, l.agent_id) for l in of(act.Launch, actions) for t in l.tasks}
    for t, agent in launched.values():
        job.status(StatusUpdate(t.task_id, TaskState.TASK_RUNNING, agent_id=agent), 0.0)
    assert job.phase == RUNNING
    return job, launched


def test_tasks_move_once_the_window_is_within_the_margin_then_the_machine_is_given_back():
    job, launched = running()
    on_s1 = [k for k, (_, agent) in launched.items() if agent == "S1"]
    assert on_s1, launched
    window = Window(start=1000.0, duration=3600.0)  # margin 300 s: acts from 700 s
    assert job.inverse_offers([InverseOffer("I1", "S1", "h1", window)], 600.0) == [], "not yet: training goes on"
    assert job.next_deadline(600.0) <= 700.0
    actions = job.tick(700.0)
    (key,) = on_s1
    assert [(n.task_id, n.kind) for n in of(act.Notify, actions)][0] == (launched[key][0].task_id, "maintenance")
    assert launched[key][0].task_id in {k.task_id for k in of(act.Kill, actions)}
    assert not of(act.AcceptInverseOffers, actions), "its tasks still run there"
    # Every worker of a collective job saves at the agreed step and exits 42: a planned stop.
    for t, agent in launched.values():
        job.status(StatusUpdate(t.task_id, TaskState.TASK_KILLED, agent_id=agent, exit_code=42), 710.0)
    assert of(act.AcceptInverseOffers, job.tick(711.0)) == [act.AcceptInverseOffers(("I1",))]
    assert any("h1" in e and "given back" in e for e in job.events)
    # Placed again: never on S1 (its offer carries the window), no failure counted.
    near = offer(1, cpus=8, mem=16384)
    near = type(near)(**{**vars(near), "unavailability": window})
    actions = job.offers([near, offer(0, cpus=2, mem=2048), offer(2, cpus=2, mem=2048)], 712.0)
    assert "O1" in {oid for d in of(act.Decline, actions) for oid in d.offer_ids}
    assert {l.agent_id for l in of(act.Launch, actions)} == {"S0", "S2"}
    assert job.job_restarts == 0 and all(r.restarts == 0 for r in job.tasks.values())


def test_a_machine_the_job_does_not_use_is_given_back_at_once_and_a_rescinded_offer_forgotten():
    job, _ = running()
    far = Window(start=10**6, duration=60.0)
    actions = job.inverse_offers([InverseOffer("I9", "S9", "h9", far)], 1.0)
    assert of(act.AcceptInverseOffers, actions) == [act.AcceptInverseOffers(("I9",))]
    job.inverse_offers([InverseOffer("I2", "S1", "h1", far)], 2.0)
    job.inverse_offer_rescinded("I2")
    assert job.next_deadline(3.0) < far.start - 300, "nothing to wake up for"
    assert not of(act.Kill, job.tick(far.start)), "rescinded: no task moves for it"
