"""Resolved options into the JobSpec the core works on.

Schema validation (``tfmesos.options.load``) checks each field on its own; this module adds the
checks that span fields of the document (a command for every non-server role), then asks the
framework's profile what it cannot run (TensorFlow's: a task to train, a task to decide success;
``core/tensorflow/profile.py``, the one home of such checks).
"""
from __future__ import annotations

import dataclasses
import shlex
from typing import Any

from ..core.spec import TENSORBOARD, JobSpec, Policies, Resources, RestartPolicy, RoleSpec, ServiceSpec, TaskKey, Volume
from ..core.tensorflow.legacy_keras import with_legacy_keras
from ..core.secrets import SecretUse, parse_source
from ..core.tensorflow.profile import TENSORFLOW, TF_ROLES
from .load import OptionsError


def parse_volume(text: str) -> Volume:
    """HOST_PATH:CONTAINER_PATH[:ro|rw], as douban/tfmesos' -V took it (the schema checks the shape)."""
    parts = text.split(":")
    if len(parts) not in (2, 3) or not parts[0] or not parts[1] or (len(parts) == 3 and parts[2].upper() not in ("RO", "RW")):
        raise OptionsError([f"$.job.volumes: {text!r} is invalid: expected HOST_PATH:CONTAINER_PATH[:ro|rw]"])
    return Volume(container_path=parts[1], host_path=parts[0], mode=parts[2].upper() if len(parts) == 3 else "RW")


def tensorboard_role(options: dict[str, Any]) -> RoleSpec:
    """TensorBoard as a task: on the port from its offer, reading the checkpoint directory by default."""
    logdir = shlex.quote(options["logdir"]) if options.get("logdir") else '"${TFMESOS_CHECKPOINT_DIR:-.}"'
    command = (f'exec "$TFMESOS_PYTHON" -m tensorboard.main --logdir {logdir} --port "$TFMESOS_PORT" '
               '--host "${LIBPROCESS_IP:-0.0.0.0}"')
    resources = Resources(float(options.get("cpus", 0.2)), float(options.get("mem", 512)))
    return RoleSpec(TENSORBOARD, 1, resources, command, restart_policy=RestartPolicy.ON_FAILURE, max_restarts=3)


def _env_pairs(items: list[str]) -> tuple[tuple[str, str], ...]:
    return tuple(tuple(item.split("=", 1)) for item in items)  # type: ignore[misc]


def secret_uses(job: dict[str, Any]) -> tuple[SecretUse, ...]:
    """``job.secret_env`` then ``job.secret_files``, each ``TARGET=SOURCE`` (the schema checks the shape)."""
    return tuple(SecretUse(target, parse_source(source), as_file=as_file)
                 for field, as_file in (("secret_env", False), ("secret_files", True))
                 for target, source in (item.split("=", 1) for item in job.get(field, ())))


def role_resources(role: str, raw: dict[str, Any], problems: list[str]) -> Resources:
    """The role's fields (cpus, mem, disk, gpus) and its ``resources`` list ("NAME:AMOUNT", any
    scalar the agents offer) as one map; the schema checked each entry's shape."""
    named: dict[str, float] = {}
    for i, entry in enumerate(raw.get("resources", ())):
        name, amount = entry.split(":", 1)
        where = f"$.roles.{role}.resources[{i}]"
        if name in raw:  # cpus, mem, disk, gpus: a field of their own, which always has a value
            problems.append(f"{where}: {entry!r} names {name}, which is $.roles.{role}.{name}: "
                            f"expected {name} there only")
        elif name == "ports":
            problems.append(f"{where}: {entry!r}: ports are ranges, and tfmesos gives each task one: "
                            "expected a scalar resource")
        elif name in named:
            problems.append(f"{where}: {entry!r} names {name} a second time: expected each resource once")
        else:
            named[name] = float(amount)
    return Resources(float(raw["cpus"]), float(raw["mem"]), float(raw["disk"]), int(raw["gpus"]), scalars=named)


def job_spec_from_options(options: dict[str, Any], external: tuple[tuple[TaskKey, str], ...] = (),
                          success: str | None = None) -> JobSpec:
    """Build the JobSpec from options already resolved by ``tfmesos.options.load.resolve_options``
    (``external``: members of its cluster that are not Mesos tasks, ``JobSpec.external``;
    ``success``: a policy the front-end sets, "never" for a cluster of servers), or refuse it
    with every problem of the fields together and of the job as its framework sees it."""
    spec, problems = job_spec_and_problems(options, external, success)
    if problems:
        raise OptionsError(problems)
    return spec


def job_spec_and_problems(options: dict[str, Any], external: tuple[tuple[TaskKey, str], ...] = (),
                          success: str | None = None) -> tuple[JobSpec, list[str]]:
    """The JobSpec, and what is wrong with it (``job_spec_from_options`` refuses it then): a
    front-end asks the place's checks about the same spec in the same round."""
    job, svc, pol = options["job"], options["service"], options["policies"]
    problems: list[str] = []
    roles: list[RoleSpec] = []
    for name in TF_ROLES:  # the options' roles are TensorFlow's, in its order
        raw = options["roles"].get(name)
        if not raw or raw["count"] == 0:
            continue
        command: str | None = None
        if raw["server"] and raw["command"]:
            problems.append(
                f"$.roles.{name}.command: {raw['command'][:80]!r} is given with \"server\": true"
                f"{' (the default for ps)' if name == 'ps' else ''}, which runs the built-in TensorFlow server "
                f"instead: expected \"server\": false to run this command, or no command"
            )
        if not raw["server"]:
            command = raw["command"] or job["command"]
            if not command:
                problems.append(
                    f"$.roles.{name}.command: empty, and $.job.command is empty too: "
                    f"expected a command for {name} tasks, or \"server\": true"
                )
        roles.append(
            RoleSpec(
                name=name,
                count=raw["count"],
                resources=role_resources(name, raw, problems),
                command=command,
                env=_env_pairs(raw["env"]),
                restart_policy=RestartPolicy(raw["restart_policy"]),  # the schema allows only its values
                max_restarts=raw["max_restarts"],
                job_command=command is not None and not raw["command"],
            )
        )
    tensorboard = options.get("tensorboard") or {}
    if tensorboard.get("enabled"):
        roles.append(tensorboard_role(tensorboard))
    spec = JobSpec(
        service=ServiceSpec(
            name=svc["name"],
            user=svc["user"],
            mesos_role=svc["role"],
            principal=svc["principal"],
            revocable=bool(svc["revocable"]),
            failover_timeout=float(svc["failover_timeout"]),
            zk=svc["zk"],
            state_dir=svc["state_dir"],
            api_port=int(svc["api_port"]),
            api_token_reads=bool(svc["api_token_reads"]),
        ),
        roles=tuple(roles),
        policies=Policies(
            success=success or pol["success"],  # "never": cluster()'s, not an option
            max_job_restarts=pol["max_job_restarts"],
            backoff_seconds=float(pol["backoff_seconds"]),
            backoff_max_seconds=float(pol["backoff_max_seconds"]),
            startup_timeout_seconds=float(pol["startup_timeout_seconds"]),
            placement_timeout_seconds=float(pol["placement_timeout_seconds"]),
            queue_timeout_seconds=float(pol["queue_timeout_seconds"]),
            active_deadline_seconds=float(pol["active_deadline_seconds"]),
            stop_grace_seconds=float(pol["stop_grace_seconds"]),
            maintenance_margin_seconds=float(pol["maintenance_margin_seconds"]),
        ),
        workdir=job["workdir"],
        env=with_legacy_keras(_env_pairs(job["env"]), bool(job.get("legacy_keras", True))),
        uris=tuple(job["uris"]),
        image=job["image"],
        python=job["python"],
        checkpoint_dir=job["checkpoint_dir"],
        secrets=secret_uses(job),
        external=external,
        profile=TENSORFLOW,  # the framework tfmesos runs (the only one so far)
    )
    problems += spec.profile.problems(spec)
    volumes = []
    for text in job.get("volumes", ()):
        try:
            volumes.append(parse_volume(text))
        except OptionsError as exc:
            problems += exc.problems
    return dataclasses.replace(spec, volumes=tuple(volumes)), problems
