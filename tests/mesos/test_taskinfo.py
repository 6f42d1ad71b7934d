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
