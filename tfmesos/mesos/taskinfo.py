"""Build Mesos TaskInfo messages for placed tasks.

Resources are carved out of the offer's own resource entries so that each carries the
``role``/``reservation``/``allocation_info`` it was offered with (required for reserved
resources and for MULTI_ROLE frameworks), its ``revocable`` marker and its ``disk`` source.
"""
from __future__ import annotations

import base64
import copy
import shlex
from dataclasses import dataclass, field
from typing import Any

from ..core.actions import TaskLaunch
from ..core.secrets import NO_VALUES, SecretValues, read_by_scheduler, references
from .offers import is_reserved, usable
from ..core.spec import EXECUTOR_CPUS, EXECUTOR_MEM, JobSpec
from .messages import ClusterSpecMessage, TaskPayload, encode

# What a piece keeps of the entry it is cut from: Mesos matches a task's resources against the
# offer's by all of these (a revocable cpus piece without "revocable", or a PATH disk piece without
# its "disk" source, is more than was offered: TASK_ERROR).
_KEEP = ("role", "reservation", "reservations", "allocation_info", "revocable", "disk", "provider_id")


class OfferLedger:
    """What is left of one offer's resource entries while tasks are cut out of it."""

    def __init__(self, raw_offer: dict[str, Any], revocable: bool = False):
        entries = [copy.deepcopy(r) for r in raw_offer.get("resources", ()) if usable(r, revocable)]
        # Reserved pieces first: the role's own resources before the shared pool (stable sort).
        self._entries = sorted(entries, key=lambda r: not is_reserved(r))

    def scalar(self, name: str, amount: float) -> list[dict[str, Any]]:
        out, left = [], amount
        for entry in self._entries:
            if left <= 1e-9:
                break
            if entry.get("name") != name or entry.get("type", "SCALAR") != "SCALAR":
                continue
            have = entry["scalar"]["value"]
            take = min(have, left)
            if take <= 1e-9:
                continue
            entry["scalar"]["value"] = round(have - take, 3)
            left -= take
            out.append(self._piece(entry, {"type": "SCALAR", "scalar": {"value": round(take, 3)}}))
        if left > 1e-6:
            raise ValueError(f"offer lacks {left:g} {name}")
        return out

    def port(self, port: int) -> dict[str, Any]:
        for entry in self._entries:
            if entry.get("name") != "ports":
                continue
            ranges = entry["ranges"]["range"]
            for i, rng in enumerate(ranges):
                if rng["begin"] <= port <= rng["end"]:
                    pieces = [{"begin": rng["begin"], "end": port - 1}, {"begin": port + 1, "end": rng["end"]}]
                    ranges[i : i + 1] = [p for p in pieces if p["begin"] <= p["end"]]
                    return self._piece(entry, {"type": "RANGES", "ranges": {"range": [{"begin": port, "end": port}]}})
        raise ValueError(f"offer lacks port {port}")

    @staticmethod
    def _piece(entry: dict[str, Any], value: dict[str, Any]) -> dict[str, Any]:
        return {"name": entry["name"], **value, **{k: copy.deepcopy(entry[k]) for k in _KEEP if k in entry}}


@dataclass(frozen=True)
class ExecutorSettings:
    python: str  # interpreter on the agent that has tfmesos installed
    framework_user: str = ""
    secrets: SecretValues = field(default=NO_VALUES, repr=False)  # the env:/file: secrets' values


def task_payload(spec: JobSpec, launch: TaskLaunch, python: str, secrets: SecretValues = NO_VALUES,
                 cluster_spec: ClusterSpecMessage | None = None) -> TaskPayload:
    """What the executor needs to start the task's process (sent as TaskInfo.data), with a small
    gang's ClusterSpec (``cluster_spec``: the Launch's); without it the executor asks for that (a
    framework message, once per executor)."""
    role = spec.role(launch.key.role)
    assert role is not None
    unread = [u.target for u in read_by_scheduler(spec.secrets) if u not in secrets.values]
    if unread:  # a task must never start without a secret it was promised
        raise ValueError(f"the values of the job's secrets {', '.join(unread)} were not read")
    return TaskPayload(
        role=launch.key.role,
        index=launch.key.index,
        port=launch.port,
        restarts=launch.restarts,
        command=role.command,
        env=dict(spec.env) | dict(role.env),
        workdir=spec.workdir,
        checkpoint_dir=spec.checkpoint_dir,
        python=python,
        service=spec.service.name,
        stream_output=launch.key in spec.streamed_keys,
        secret_env=secrets.env(),
        secret_files={path: base64.b64encode(data).decode() for path, data in secrets.files().items()},
        spec_version=cluster_spec.version if cluster_spec else 0,
        cluster_z=cluster_spec.cluster_z if cluster_spec else "",
    )


def secret_references(spec: JobSpec) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The job's secret store names as Mesos REFERENCE secrets, for the agent's resolver: (the
    executor's environment variables, its SECRET volumes: files under the sandbox, read-only)."""
    env, volumes = [], []
    for use in references(spec.secrets):
        secret = {"type": "REFERENCE", "reference": {"name": use.source.name}}
        if use.as_file:
            volumes.append({"container_path": use.target, "mode": "RO", "source": {"type": "SECRET", "secret": secret}})
        else:
            env.append({"name": use.target, "type": "SECRET", "secret": secret})
    return env, volumes


def build_task_info(
    spec: JobSpec, launch: TaskLaunch, agent_id: str, ledger: OfferLedger, settings: ExecutorSettings,
    cluster_spec: ClusterSpecMessage | None = None,
) -> dict[str, Any]:
    role = spec.role(launch.key.role)
    assert role is not None
    res = role.resources
    # Every scalar the role asks for, by name; cpus and mem always (Mesos wants them on a task).
    resources = ledger.scalar("cpus", res.cpus) + ledger.scalar("mem", res.mem)
    for name, amount in res.items():
        if name not in ("cpus", "mem"):
            resources += ledger.scalar(name, amount)
    resources.append(ledger.port(launch.port))

    # In an image the scheduler's own interpreter path means nothing: without job.python, the
    # image's python3 (first on its PATH; the tfmesos image puts its venv there).
    python = spec.python or ("python3" if spec.image else settings.python)
    command: dict[str, Any] = {
        "shell": True,
        "value": f"exec {shlex.quote(python)} -m tfmesos.executor",
        "uris": [{"value": uri, "extract": True, "cache": False} for uri in spec.uris],
    }
    if settings.framework_user:
        command["user"] = settings.framework_user
    secret_env, secret_volumes = secret_references(spec)
    if secret_env:  # on the executor: a task run by a custom executor has no CommandInfo of its own
        command["environment"] = {"variables": secret_env}
    executor: dict[str, Any] = {
        "executor_id": {"value": launch.task_id},
        "type": "CUSTOM",
        "name": f"tfmesos executor {launch.key.name}",
        "command": command,
        "resources": ledger.scalar("cpus", EXECUTOR_CPUS) + ledger.scalar("mem", EXECUTOR_MEM),
    }
    if spec.image:
        executor["container"] = {"type": "MESOS", "mesos": {"image": {"type": "DOCKER", "docker": {"name": spec.image}}}}
    if spec.volumes or secret_volumes:
        executor.setdefault("container", {"type": "MESOS"})["volumes"] = [
            {"container_path": v.container_path, "host_path": v.host_path, "mode": v.mode} for v in spec.volumes
        ] + secret_volumes
    name = spec.service.name
    return {
        "name": f"{name}{launch.key.name}",
        "task_id": {"value": launch.task_id},
        "agent_id": {"value": agent_id},
        "resources": resources,
        "executor": executor,
        # SIGTERM to SIGKILL when the task is stopped: its time to save at the step after the
        # notice (the executor honours it, and a drain's max_grace_period caps it).
        "kill_policy": {"grace_period": {"nanoseconds": int(spec.policies.stop_grace_seconds * 1e9)}},
        "data": encode(task_payload(spec, launch, python, settings.secrets, cluster_spec)),
        # What an operator filters by in the web UI and /state: TF_CONFIG's words for the task
        # ("type", "index"), never "role", which on Mesos is the framework's role.
        "labels": {"labels": [
            {"key": "tfmesos.service", "value": name},
            {"key": "tfmesos.task_type", "value": launch.key.role},
            {"key": "tfmesos.task_index", "value": str(launch.key.index)},
        ]},
        "discovery": {
            "visibility": "FRAMEWORK",
            "name": f"{name.replace('/', '-')}-{launch.key.role}-{launch.key.index}",
            "ports": {"ports": [{"number": launch.port, "name": "grpc", "protocol": "tcp"}]},
        },
    }
