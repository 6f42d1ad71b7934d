"""Checks made before anything starts, for what would otherwise fail late or silently.

``option_problems`` is pure (the spec only): what Mesos would refuse later (a task id longer than
it allows, a failover_timeout it cannot hold) and options that would be silently overridden or
ignored. ``environment_problems`` looks at this process' environment and the file system.
Each problem names the option and what was expected, like the schema's own messages.
"""
from __future__ import annotations

import os
import re
from typing import Mapping

from .spec import ROLE_ORDER, JobSpec

MESOS_ID_MAX = 255  # Mesos refuses longer task and executor ids (NAME_MAX: they name sandbox dirs)
LAUNCH_SEQ_DIGITS = 10  # room for the launch counter at the end of every task id
FAILOVER_TIMEOUT_MAX = 9_223_372_036.0  # Mesos keeps it as int64 nanoseconds
_PLACEHOLDER_LIKE = re.compile(r"(?<!\$)\{([a-z][a-z0-9]*_[a-z0-9_]+)\}")
RESERVED_ENV = re.compile(r"^(TF_CONFIG|TFMESOS_[A-Z0-9_]*)$")
SERVER_ROLES = ("ps",)
# What tfmesos.core.clusterspec.substitute_placeholders fills in.
PLACEHOLDERS = ("job_name", "task_index", *(f"{role}_hosts" for role in ROLE_ORDER))


def _env_sources(spec: JobSpec) -> list[tuple[str, tuple[tuple[str, str], ...]]]:
    return [("$.job.env", spec.env)] + [(f"$.roles.{r.name}.env", r.env) for r in spec.roles]


def option_problems(spec: JobSpec) -> list[str]:
    problems: list[str] = []
    name = spec.service.name.replace("/", "_")
    longest = max((len(f"{name}.{r.name}.{r.count - 1}.") for r in spec.roles), default=0) + LAUNCH_SEQ_DIGITS
    if longest > MESOS_ID_MAX:
        room = MESOS_ID_MAX - (longest - len(name))
        problems.append(f"$.service.name: {len(spec.service.name)} characters make task ids of {longest}: "
                        f"expected at most {room} characters (Mesos refuses ids longer than {MESOS_ID_MAX})")
    if spec.service.failover_timeout > FAILOVER_TIMEOUT_MAX:
        problems.append(f"$.service.failover_timeout: {spec.service.failover_timeout:g} is invalid: "
                        f"expected a number <= {FAILOVER_TIMEOUT_MAX:.0f} (what Mesos can hold)")
    for where, pairs in _env_sources(spec):
        for key, _ in pairs:
            if RESERVED_ENV.match(key):
                problems.append(f"{where}: {key} is set by tfmesos for every task (the ClusterSpec): "
                                "expected another variable name")
    for role in spec.roles:
        if role.command:
            for unknown in sorted(set(_PLACEHOLDER_LIKE.findall(role.command)) - set(PLACEHOLDERS)):
                problems.append(f"$.roles.{role.name}.command: placeholder {{{unknown}}} does not exist: expected one of "
                                + ", ".join(f"{{{p}}}" for p in PLACEHOLDERS) + " (${NAME} for a shell variable)")
        if role.restart_policy == "Always" and role.command is not None and role.name not in SERVER_ROLES:
            problems.append(f"$.roles.{role.name}.restart_policy: \"Always\" restarts a {role.name} after every "
                            "success too, so the job never ends: expected it only on servers (ps, or \"server\": true)")
    return problems


def environment_problems(spec: JobSpec, environ: Mapping[str, str], embedded: bool) -> tuple[list[str], list[str]]:
    """(problems, warnings) from this process' environment and what the scheduler can see."""
    problems: list[str] = []
    warnings: list[str] = []
    if environ.get("MESOS_SECRET") and not spec.service.principal:
        problems.append("MESOS_SECRET is set but $.service.principal is empty: the secret would be ignored; "
                        "expected service.principal (or unset MESOS_SECRET)")
    if spec.service.principal and not environ.get("MESOS_SECRET") and not embedded:
        warnings.append(f"$.service.principal {spec.service.principal!r} without MESOS_SECRET: the master "
                        "will refuse the framework if it authenticates frameworks")
    ckpt = spec.checkpoint_dir
    if ckpt and os.path.isabs(ckpt):
        if os.path.exists(ckpt) and not os.path.isdir(ckpt):
            problems.append(f"$.job.checkpoint_dir: {ckpt!r} is a file: expected a directory")
        else:
            parent = ckpt
            while not os.path.exists(parent) and os.path.dirname(parent) != parent:
                parent = os.path.dirname(parent)
            if not os.access(parent, os.W_OK | os.X_OK):
                # Locally the tasks run here, as us; on a cluster the agents may see another disk.
                (problems if embedded else warnings).append(
                    f"$.job.checkpoint_dir: {ckpt!r} is not writable here ({parent!r} is not): "
                    "expected a directory the tasks can write to")
    return problems, warnings
