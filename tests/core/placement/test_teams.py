"""Role semantics on the scheduler side: reserved offers, revocable resources, quota waits."""
from __future__ import annotations

import pytest

from tfmesos.core.actions import TaskLaunch
from tfmesos.mesos.offers import parse_offer
from tfmesos.core.placement.matching import Demand, place
from tfmesos.core.placement.quota import quota_shortfall
from tfmesos.scheduler.live_jobs import refuse_duplicate
from tfmesos.mesos.taskinfo import ExecutorSettings, OfferLedger, build_task_info
from tfmesos.options.load import OptionsError
from tfmesos.core.spec import Resources, TaskKey

from tests.core.helpers import offer, spec_of

ROLE = {"allocation_info": {"role": "team-a"}}
STATIC = {"reservations": [{"type": "STATIC", "role": "team-a"}]}


def _scalar(name: str, value: float, **extra) -> dict:
    return {"name": name, "type": "SCALAR", "scalar": {"value": value}, **ROLE, **extra}


def raw_offer(resources: list[dict], oid: str = "O1") -> dict:
    return {"id": {"value": oid}, "agent_id": {"value": "S1"}, "hostname": "h", "resources": resources,
            "allocation_info": {"role": "team-a"}}


MIXED = raw_offer([
    _scalar("cpus", 2.0, **STATIC), _scalar("mem", 1024.0, **STATIC),
    {"name": "ports", "type": "RANGES", "ranges": {"range": [{"begin": 31000, "end": 31005}]}, **ROLE, **STATIC},
    _scalar("cpus", 2.0), _scalar("mem", 1024.0), _scalar("cpus", 8.0, revocable={}),
])


def test_offer_sums_reserved_and_shared_but_not_revocable_unless_asked():
    parsed = parse_offer(MIXED)
    assert (parsed.scalars.cpus, parsed.scalars.mem, parsed.reserved, parsed.mesos_role) == (4.0, 2048.0, 2.0, "team-a")
    assert parse_offer(MIXED, revocable=True).scalars.cpus == 12.0


def test_tasks_use_the_reserved_resources_first_and_keep_reservation_and_role():
    spec = spec_of(chief={"count": 1, "cpus": 2.5, "mem": 512})
    ledger = OfferLedger(MIXED)
    launch = TaskLaunch(TaskKey("chief", 0), "t.chief.0.1", 31000, Resources(2.6, 576), 0)
    info = build_task_info(spec, launch, "S1", ledger, ExecutorSettings(python="python3"))
    cpus = [r for r in info["resources"] if r["name"] == "cpus"]
    # 2 reserved cpus first, the remaining 0.5 from the shared pool, same allocation role throughout.
    assert [(r["scalar"]["value"], r.get("reservations")) for r in cpus] == [
        (2.0, STATIC["reservations"]), (0.5, None)]
    assert all(r["allocation_info"] == {"role": "team-a"} for r in info["resources"] + info["executor"]["resources"])
    assert not any("revocable" in r for r in info["resources"] + info["executor"]["resources"])


def test_placement_fills_offers_with_reserved_resources_before_the_shared_pool():
    shared, reserved = offer(0), offer(1)
    reserved = type(reserved)(**{**reserved.__dict__, "reserved": 4.0})
    p = place([Demand(TaskKey("worker", 0), Resources(1, 512))], [shared, reserved])
    assert [a.offer_id for a in p.assignments] == ["O1"]


def test_quota_shortfall_names_the_role_and_what_is_missing():
    reason = quota_shortfall("team-a", {"cpus": 3.0}, {"cpus": 2.8}, {"cpus": 0.2}, {"cpus": 1.2, "mem": 900})
    assert reason is not None and "role team-a's quota" in reason and "cpus 1.2 needed, limit 3, 2.6 held by others" in reason
    assert quota_shortfall("team-a", {"cpus": 3.0}, {"cpus": 1.0}, {}, {"cpus": 1.2}) is None
    assert quota_shortfall("team-a", {"mem": 100.0}, {}, {}, {"cpus": 5.0}) is None  # no limit on cpus

def test_a_second_live_job_with_the_same_name_is_refused_naming_the_first():
    running = [{"id": "F1", "name": "train", "active": True, "roles": ["team-b"], "principal": "b"}]
    with pytest.raises(OptionsError, match="already running on m:5050 as framework F1 \\(role team-b, principal b\\)"):
        refuse_duplicate(running, "train", None, "m:5050")
    refuse_duplicate(running, "train", "F1", "m:5050")  # our own framework, resumed after a restart
    refuse_duplicate(running, "other", None, "m:5050")
