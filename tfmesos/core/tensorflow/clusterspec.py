"""The ClusterSpec every task is given, in TensorFlow's TF_CONFIG shape.

TensorFlow's convention: the evaluator is not part of the cluster (nobody connects to it);
it gets the others' cluster with ``task.type == "evaluator"``.
"""
from __future__ import annotations

import re

from ..task_key import TaskKey

TYPE_CHECKING = False
if TYPE_CHECKING:  # not at run time: the executor imports this module (typing costs each one ~4 ms)
    from typing import Mapping

ClusterDict = dict[str, list[str]]
TF_ROLES = ("chief", "ps", "worker", "evaluator")  # TensorFlow's roles, in the order its ClusterSpec lists them
IN_CLUSTER = tuple(r for r in TF_ROLES if r != "evaluator")
# The variable that tells a task its TensorFlow role, named with TensorFlow's own word for a role
# ("job_name", as in tf.distribute.Server): training scripts read it, so it keeps that name.
ROLE_ENV = "TFMESOS_JOB_NAME"


def cluster_spec(endpoints: Mapping[TaskKey, str]) -> ClusterDict:
    """role -> [host:port by task index]; every task of a role must have an endpoint."""
    by_role: dict[str, dict[int, str]] = {}
    for key, addr in endpoints.items():
        by_role.setdefault(key.role, {})[key.index] = addr
    cluster: ClusterDict = {}
    for role in TF_ROLES:
        tasks = by_role.get(role)
        if tasks:
            missing = [i for i in range(max(tasks) + 1) if i not in tasks]
            if missing:
                raise ValueError(f"no endpoint for {role} task(s) {missing}")
            cluster[role] = [tasks[i] for i in range(len(tasks))]
    return cluster


def tf_config(cluster: ClusterDict, key: TaskKey) -> dict:
    return {
        "cluster": {role: list(cluster[role]) for role in IN_CLUSTER if role in cluster},
        "task": {"type": key.role, "index": key.index},
    }


# Compiled on first use (re's cache): a cold executor whose command has no "{" never pays for it.
_PLACEHOLDER = r"(?<!\$)\{(job_name|task_index|ps_hosts|worker_hosts|chief_hosts|evaluator_hosts)\}"


def substitute_placeholders(command: str, cluster: ClusterDict, key: TaskKey) -> str:
    """Fill the placeholders of older tfmesos-style scripts; shell ``${VAR}`` stays as it is."""
    if "{" not in command:
        return command
    values = {
        "job_name": key.role,  # TensorFlow's word for the role
        "task_index": str(key.index),
        **{f"{role}_hosts": ",".join(cluster.get(role, [])) for role in TF_ROLES},
    }
    return re.sub(_PLACEHOLDER, lambda m: values[m.group(1)], command)


def hosts_env(cluster: ClusterDict) -> dict[str, str]:
    """The host lists douban/tfmesos 0.0.10 gave every command in its environment, for the scripts
    that read them there instead of taking ``{ps_hosts}``/``{worker_hosts}`` as arguments."""
    return {
        "TFMESOS_PS_HOSTS": ",".join(cluster.get("ps", [])),
        "TFMESOS_WORKER_HOSTS": ",".join(cluster.get("worker", [])),
        "TFMESOS_DISTRIBUTED": "1",
    }
