from tfmesos.mesos.offers import parse_offer
from tfmesos.core.placement.matching import Demand, place
from tfmesos.core.spec import Resources, TaskKey

from tests.core.helpers import offer

R = Resources(1, 1024)


def demands(role: str, n: int, res: Resources = R) -> list[Demand]:
    return [Demand(TaskKey(role, i), res) for i in range(n)]


def test_packs_a_role_into_one_offer_with_distinct_ports():
    p = place(demands("worker", 3), [offer(0)])
    assert p.complete
    assert {a.offer_id for a in p.assignments} == {"O0"}
    assert sorted(a.port for a in p.assignments) == [31000, 31001, 31002]


def test_spills_to_next_offer_and_reports_unplaced():
    p = place(demands("worker", 5), [offer(0, cpus=2), offer(1, cpus=2)])
    assert len(p.assignments) == 4
    assert p.unplaced == (TaskKey("worker", 4),)
    assert {a.offer_id for a in p.assignments} == {"O0", "O1"}


def test_memory_and_ports_limit_too():
    assert len(place(demands("w", 4), [offer(0, mem=2048)]).assignments) == 2
    assert len(place(demands("w", 4), [offer(0, ports=((31000, 31000),))]).assignments) == 1


def test_gpu_tasks_only_on_gpu_agents_and_cpu_tasks_avoid_them():
    gpu = Resources(1, 1024, gpus=1)
    p = place(demands("worker", 2, gpu) + demands("ps", 1), [offer(0, gpus=2), offer(1, gpus=0)])
    assert p.complete
    by_key = {a.key: a.agent_id for a in p.assignments}
    assert by_key[TaskKey("worker", 0)] == by_key[TaskKey("worker", 1)] == "S0"
    assert by_key[TaskKey("ps", 0)] == "S1"
    assert not place(demands("worker", 1, gpu), [offer(1)]).assignments


def test_prefers_the_old_agent_and_port():
    d = [Demand(TaskKey("worker", 0), R, prefer_agent="S1", prefer_port=31050)]
    p = place(d, [offer(0), offer(1)])
    assert (p.assignments[0].agent_id, p.assignments[0].port) == ("S1", 31050)
    # The old port is gone: same agent, another port.
    p = place(d, [offer(0), offer(1, ports=((31000, 31010),))])
    assert p.assignments[0].agent_id == "S1" and p.assignments[0].port == 31000


def test_preferred_port_is_not_handed_out_twice():
    d = [Demand(TaskKey("worker", 0), R, prefer_agent="S0", prefer_port=31000)] + demands("ps", 2)
    p = place(d, [offer(0)])
    ports = [a.port for a in p.assignments]
    assert sorted(ports) == [31000, 31001, 31002]


def test_parse_offer_sums_roles_and_skips_revocable():
    raw = {
        "id": {"value": "O1"}, "agent_id": {"value": "S1"}, "hostname": "h",
        "allocation_info": {"role": "ml"},
        "resources": [
            {"name": "cpus", "type": "SCALAR", "scalar": {"value": 2.0}, "role": "*"},
            {"name": "cpus", "type": "SCALAR", "scalar": {"value": 1.5}, "role": "ml"},
            {"name": "cpus", "type": "SCALAR", "scalar": {"value": 8.0}, "revocable": {}},
            {"name": "mem", "type": "SCALAR", "scalar": {"value": 512.0}},
            {"name": "gpus", "type": "SCALAR", "scalar": {"value": 2.0}},
            {"name": "ports", "type": "RANGES", "ranges": {"range": [{"begin": 5, "end": 9}, {"begin": 1, "end": 2}]}},
        ],
    }
    o = parse_offer(raw)
    assert (o.scalars.cpus, o.scalars.mem, o.gpus, o.mesos_role) == (3.5, 512.0, 2, "ml")
    assert o.ports == ((1, 2), (5, 9)) and o.port_count == 7


FPGA = Resources(1, 1024, scalars={"fpgas": 1})


def test_a_custom_scalar_goes_only_where_it_is_offered_and_counts_down():
    p = place(demands("worker", 3, FPGA), [offer(0), offer(1, fpgas=2)])
    assert [a.agent_id for a in p.assignments] == ["S1", "S1"]  # 2 fpgas: two tasks, not three
    assert p.unplaced == (TaskKey("worker", 2),)
    assert p.assignments[0].resources.get("fpgas") == 1
    # A task without fpgas still goes anywhere.
    assert place(demands("ps", 1), [offer(1, fpgas=2)]).complete


def test_parse_offer_keeps_every_scalar_by_name():
    raw = {"id": {"value": "O1"}, "agent_id": {"value": "S1"}, "hostname": "h", "resources": [
        {"name": "cpus", "type": "SCALAR", "scalar": {"value": 2.0}},
        {"name": "fpgas", "type": "SCALAR", "scalar": {"value": 1.0}, "role": "*"},
        {"name": "fpgas", "type": "SCALAR", "scalar": {"value": 2.0}, "role": "ml"},
        {"name": "zones", "type": "SET", "set": {"item": ["a"]}},
    ]}
    o = parse_offer(raw)
    assert dict(o.scalars) == {"cpus": 2.0, "fpgas": 3.0}
