"""douban/tfmesos' call shapes, translated into an options document.

``cluster(jobs_def, master=..., quiet=..., volumes=..., local_task=..., extra_config=...)``
took a list of jobs ``{"name", "num", "cpus", "mem", "gpus", "cmd"}``; a job without ``cmd``
ran a bare TensorFlow server. Here each job becomes a role of the options document (so the
same validation and the same scheduler apply); what has no equivalent is refused by name.
"""
from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..options.load import OptionsError
from ..core.spec import TaskKey
from ..core.tensorflow.profile import TF_ROLES

# douban's defaults for a job's resources.
DEFAULT_CPUS = 1.0
DEFAULT_MEM = 1024.0
JOB_FIELDS = ("name", "num", "cpus", "mem", "gpus", "cmd", "start")
EXTRA_CONFIG_KEYS = ("initializer", "finalizer")
SERVER_COMMAND = '"$TFMESOS_PYTHON" -m tfmesos.task.tfserver'
# douban's cluster() keyword arguments besides the jobs, master, name, quiet and volumes.
EXTRAS = ("local_task", "extra_config", "role", "env", "containerizer_type", "force_pull_image", "protocol",
          "forward_addresses")


@dataclass
class Job:
    """douban's ``Job`` (``from tfmesos import Job``): one job of a jobs_def, as its dict would say."""
    name: str
    num: int
    cpus: float = DEFAULT_CPUS
    mem: float = DEFAULT_MEM
    gpus: float = 0
    cmd: str | None = None
    start: int = 0


def is_jobs_def(value: Any) -> bool:
    """A jobs_def is a list of jobs, or one job (a dict with "name" and "num")."""
    if isinstance(value, (list, tuple, Job)):
        return True
    return isinstance(value, Mapping) and "name" in value and "num" in value


def _job_dict(job: Any, where: str) -> dict[str, Any]:
    if not isinstance(job, Mapping):  # douban's Job objects: the same fields as attributes
        job = {f: getattr(job, f) for f in JOB_FIELDS if hasattr(job, f)}
    unknown = sorted(set(job) - set(JOB_FIELDS))
    if unknown:
        raise OptionsError([f"{where}.{unknown[0]}: unknown field: expected one of {', '.join(JOB_FIELDS)}"])
    if job.get("name") not in TF_ROLES:
        raise OptionsError([f"{where}.name: {job.get('name')!r} is invalid: expected one of {', '.join(TF_ROLES)} "
                            "(TensorFlow's roles: tfmesos builds TF_CONFIG from them)"])
    if not isinstance(job.get("num"), int) or isinstance(job.get("num"), bool) or job["num"] < 0:
        raise OptionsError([f"{where}.num: {job.get('num')!r} is invalid: expected an integer >= 0"])
    return dict(job)


def volume_list(volumes: Mapping[str, str] | list[str] | tuple[str, ...]) -> list[str]:
    """douban's ``{host_path: container_path}`` (or ``["host:container[:ro]"]``) -> job.volumes."""
    if isinstance(volumes, Mapping):
        return [f"{host}:{container}" for host, container in volumes.items()]
    return list(volumes)


def wrap_command(command: str | None, extra_config: Mapping[str, Any]) -> str | None:
    """douban's extra_config: an initializer before the task's command, a finalizer after it."""
    init, fin = extra_config.get("initializer"), extra_config.get("finalizer")
    if not init and not fin:
        return command
    body = command or SERVER_COMMAND
    if init:
        body = f"{init} && {body}"
    if fin:
        body = f"{body}; rc=$?; {fin}; exit $rc"
    return body


def apply_douban_extras(doc: dict[str, Any], local_task: Any = None, extra_config: Mapping[str, Any] | None = None,
                        role: str | None = None, env: Mapping[str, str] | None = None,
                        containerizer_type: str | None = None, force_pull_image: bool = False,
                        protocol: str = "grpc", forward_addresses: Any = None,
                        ) -> tuple[dict[str, Any], dict[TaskKey, str]]:
    """The keyword arguments douban's cluster() took besides the jobs. ``forward_addresses`` (where
    douban's tasks sent their output) changes nothing: a task's output stays in its sandbox
    (``tfmesos logs NAME ROLE:INDEX``)."""
    external: dict[TaskKey, str] = {}
    if protocol != "grpc":
        raise OptionsError([f"protocol: {protocol!r} is invalid: expected 'grpc', the only protocol of TensorFlow 2's "
                            "servers (grpc+verbs and grpc+mpi left with TensorFlow 1)"])
    if local_task is not None:
        try:
            job_name, addr = local_task
        except (TypeError, ValueError):
            raise OptionsError([f"local_task: {local_task!r} is invalid: expected (job_name, 'host:port')"]) from None
        external[TaskKey(str(job_name), 0)] = str(addr)
    if extra_config:
        unknown = sorted(set(extra_config) - set(EXTRA_CONFIG_KEYS))
        if unknown:
            raise OptionsError([f"extra_config.{unknown[0]}: unknown key: expected {' or '.join(EXTRA_CONFIG_KEYS)}"])
        job_command = doc.get("job", {}).get("command") or None
        for name, r in doc.get("roles", {}).items():
            if not r.get("command") and r.get("server") is False and job_command:
                continue  # it runs job.command (tfrun's roles), wrapped once below
            command = wrap_command(r.get("command") or None, extra_config)
            if command != (r.get("command") or None):
                r["command"], r["server"] = command, False
        if job_command:
            doc["job"]["command"] = wrap_command(job_command, extra_config)
    if containerizer_type is not None and str(containerizer_type).upper() not in ("MESOS", "DOCKER"):
        raise OptionsError([f"containerizer_type: {containerizer_type!r} is invalid: expected MESOS or DOCKER"])
    # tfmesos always uses the Mesos containerizer (it runs Docker images too), and the agent's
    # image cache decides about pulls: containerizer_type and force_pull_image change nothing.
    service = doc.setdefault("service", {})
    if role:
        service["role"] = role
    job = doc.setdefault("job", {})
    if env:
        job["env"] = [f"{k}={v}" for k, v in env.items()]
    if os.environ.get("DOCKER_IMAGE") and "image" not in job:
        job["image"] = os.environ["DOCKER_IMAGE"]  # where douban's scheduler took the image from
    return doc, external


def jobs_def_options(jobs: Any, name: str | None = None, volumes: Any = None, **extras: Any,
                     ) -> tuple[dict[str, Any], dict[TaskKey, str]]:
    """douban's jobs_def (and keyword arguments) -> (options document, external tasks)."""
    if isinstance(jobs, Mapping) or not isinstance(jobs, (list, tuple)):
        jobs = [jobs]
    roles: dict[str, Any] = {}
    starts: dict[str, int] = {}
    for i, raw in enumerate(jobs):
        job = _job_dict(raw, f"jobs_def[{i}]")
        if job["name"] in roles:
            raise OptionsError([f"jobs_def[{i}].name: {job['name']!r} appears twice: expected one job per name"])
        cmd = job.get("cmd")
        roles[job["name"]] = {
            "count": job["num"],
            "cpus": float(job.get("cpus", DEFAULT_CPUS)),
            "mem": float(job.get("mem", DEFAULT_MEM)),
            "gpus": math.ceil(float(job.get("gpus") or 0)),  # douban asked Mesos for whole GPUs
            "server": not cmd,
            "command": cmd or "",
            # douban relaunched a failed task (up to 3 times); so does OnFailure here.
            "restart_policy": "OnFailure",
        }
        starts[job["name"]] = int(job.get("start", 0))
    doc: dict[str, Any] = {"roles": roles}
    if name:
        doc["service"] = {"name": name}
    if volumes:
        doc["job"] = {"volumes": volume_list(volumes)}
    doc, external = apply_douban_extras(doc, **extras)
    for job_name, start in starts.items():
        outside = {k.index for k in external if k.role == job_name}
        if any(i not in outside for i in range(start)):
            raise OptionsError([f"jobs_def: {job_name} starts at index {start}: expected local_task to name "
                                f"({job_name!r}, 'host:port') for the tasks before it"])
    return doc, external


def douban_name(argv: list[str]) -> str:
    """A service name from a command line (douban named frameworks after the script)."""
    words = [os.path.basename(w) for w in argv[:2]]
    slug = "-".join("".join(c if c.isalnum() else "-" for c in w.lower()).strip("-") for w in words if w)
    return f"tfrun-{slug}"[:60].strip("-") or "tfrun"

