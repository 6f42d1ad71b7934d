"""The TaskInfo a launch becomes (tfmesos/mesos/taskinfo.py): what an operator reads of it."""
from __future__ import annotations

from tfmesos.core.actions import TaskLaunch
from tfmesos.core.spec import Resources, TaskKey
from tfmesos.mesos.taskinfo import ExecutorSettings, OfferLedger, build_task_info
from tfmesos.options.jobspec import job_spec_from_options
from tfmesos.options.load import resolve_options

OFFER = {"resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": 4}},
                       {"name": "mem", "type": "SCALAR", "scalar": {"value": 4096}},
                       {"name": "ports", "type": "RANGES", "ranges": {"range": [{"begin": 9000, "end": 9010}]}}]}


def test_labels_name_the_service_and_the_task_as_tf_config_does_never_a_role():
    spec = job_spec_from_options(resolve_options({
        "service": {"name": "team-a-resnet", "role": "team-a"},
        "roles": {"ps": {"count": 1, "server": True}, "worker": {"count": 2}},
        "job": {"command": "python train.py"},
    }))
    info = build_task_info(spec, TaskLaunch(TaskKey("worker", 1), "team-a-resnet.worker.1.1", 9001,
                                            Resources(1, 1024), 0),
                           "agent-1", OfferLedger(OFFER), ExecutorSettings(python="python3"))
    labels = {entry["key"]: entry["value"] for entry in info["labels"]["labels"]}
    assert labels == {"tfmesos.service": "team-a-resnet", "tfmesos.task_type": "worker", "tfmesos.task_index": "1"}
    assert not any("role" in key for key in labels), "a Mesos role is the framework's: the TF task's type is not"
    assert info["discovery"]["name"] == "team-a-resnet-worker-1"


def test_pieces_keep_their_revocable_marker_and_disk_source_and_whole_disks_are_left_alone():
    """Mesos matches a task's resources against what was offered, markers included: a revocable
    piece without "revocable", or a PATH disk piece without its source, is more than was offered
    (TASK_ERROR). A MOUNT disk is used whole, a persistent volume is someone's data: neither is cut."""
    from tfmesos.mesos.offers import parse_offer

    path = {"source": {"type": "PATH", "path": {"root": "/mnt/ssd"}}}
    offer = {"id": {"value": "O1"}, "agent_id": {"value": "S1"}, "hostname": "h", "resources": [
        {"name": "cpus", "type": "SCALAR", "scalar": {"value": 2}, "revocable": {}},
        {"name": "mem", "type": "SCALAR", "scalar": {"value": 4096}},
        {"name": "disk", "type": "SCALAR", "scalar": {"value": 5000}, "disk": {"source": {"type": "MOUNT",
                                                                                         "mount": {"root": "/mnt/a"}}}},
        {"name": "disk", "type": "SCALAR", "scalar": {"value": 700}, "disk": {"persistence": {"id": "pv"},
                                                                              "volume": {"container_path": "d", "mode": "RW"}}},
        {"name": "disk", "type": "SCALAR", "scalar": {"value": 300}, "disk": path},
        {"name": "ports", "type": "RANGES", "ranges": {"range": [{"begin": 9000, "end": 9010}]}}]}
    assert parse_offer(offer, revocable=True).scalars.disk == 300, "only the PATH disk can be cut"
    assert parse_offer(offer).scalars.cpus == 0, "revocable cpus only for a job that asks for them"
    ledger = OfferLedger(offer, revocable=True)
    cpus, disk = ledger.scalar("cpus", 0.5), ledger.scalar("disk", 100)
    assert cpus == [{"name": "cpus", "type": "SCALAR", "scalar": {"value": 0.5}, "revocable": {}}]
    assert disk == [{"name": "disk", "type": "SCALAR", "scalar": {"value": 100}, "disk": path}]


def test_every_scalar_the_role_asks_for_is_taken_from_the_offer_by_name_reservation_kept():
    spec = job_spec_from_options(resolve_options({
        "service": {"name": "fpga", "role": "team-a"},
        "roles": {"worker": {"count": 1, "cpus": 1, "mem": 512, "resources": ["fpgas:2"]}},
        "job": {"command": "python train.py"},
    }))
    reserved = {"role": "team-a", "reservations": [{"type": "STATIC", "role": "team-a"}]}
    offer = {"resources": OFFER["resources"] + [
        {"name": "fpgas", "type": "SCALAR", "scalar": {"value": 1}, **reserved},
        {"name": "fpgas", "type": "SCALAR", "scalar": {"value": 4}}]}
    info = build_task_info(spec, TaskLaunch(TaskKey("worker", 0), "fpga.worker.0.1", 9000, spec.roles[0].demand, 0),
                           "agent-1", OfferLedger(offer), ExecutorSettings(python="python3"))
    fpgas = [r for r in info["resources"] if r["name"] == "fpgas"]
    # The reserved piece first (the role's own), then the shared pool; each as it was offered.
    assert [(r["scalar"]["value"], r.get("role", "*")) for r in fpgas] == [(1, "team-a"), (1, "*")]
    assert [r["name"] for r in info["resources"]] == ["cpus", "mem", "fpgas", "fpgas", "ports"]


def test_each_task_carries_the_jobs_stop_grace_as_its_kill_policy():
    spec = job_spec_from_options(resolve_options({
        "service": {"name": "grace"}, "roles": {"worker": {"count": 1}}, "job": {"command": "python train.py"},
        "policies": {"stop_grace_seconds": 45.5},
    }))
    info = build_task_info(spec, TaskLaunch(TaskKey("worker", 0), "grace.worker.0.1", 9001, Resources(1, 1024), 0),
                           "agent-1", OfferLedger(OFFER), ExecutorSettings(python="python3"))
    assert info["kill_policy"] == {"grace_period": {"nanoseconds": 45_500_000_000}}
