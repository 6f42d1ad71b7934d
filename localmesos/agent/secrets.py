"""Secrets in an executor's container, as a Mesos 1.12 agent with its default secret resolver
(no ``--secret_resolver`` module) treats them (``src/secret/resolver.cpp``, the
``environment_secret`` and ``volume/secret`` isolators).

The resolver returns a VALUE secret's bytes and fails a REFERENCE ("Default secret resolver cannot
resolve references"); the failure fails the container's launch (TASK_FAILED,
REASON_CONTAINER_LAUNCH_FAILED, "Failed to launch container: Collect failed: ..."), as measured on
a real agent. SECRET volumes are written as the ``volume/secret`` isolator (linux launcher,
``filesystem/linux``) leaves them: the file at the container path under the sandbox; read-only
(a read-only bind mount there, mode 0444 here). Absolute container paths need a mount, which the
embedded agent cannot make: refused at launch. Nothing here logs a value.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..http.protojson import b64decode


class SecretError(ValueError):
    """A secret the container cannot have: its launch fails with this message."""


def resolve(secret: dict[str, Any]) -> bytes:
    """DefaultSecretResolver::resolve."""
    if "reference" in secret:
        raise SecretError("Collect failed: Default secret resolver cannot resolve references")
    if "value" not in secret:
        raise SecretError("Collect failed: Secret has no value")
    return b64decode(secret["value"].get("data", ""))


def resolved_environment(command: dict[str, Any]) -> dict[str, str]:
    """The environment_secret isolator: each SECRET variable of the CommandInfo with its value."""
    return {variable["name"]: os.fsdecode(resolve(variable.get("secret") or {}))
            for variable in (command.get("environment") or {}).get("variables", [])
            if variable.get("type", "VALUE") == "SECRET"}


def write_secret_volumes(container: dict[str, Any] | None, sandbox: Path) -> None:
    """The volume/secret isolator: each SECRET volume's value as the file at its container path."""
    for volume in (container or {}).get("volumes", []):
        source = volume.get("source") or {}
        if source.get("type") != "SECRET":
            continue
        data = resolve(source.get("secret") or {})
        path = volume.get("container_path", "")
        if os.path.isabs(path):
            raise SecretError(f"[embedded agent] cannot mount a secret at the absolute path '{path}': "
                              "expected a path under the sandbox")
        target = sandbox / path
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if volume.get("mode", "RW") == "RO":
            os.chmod(target, 0o444)
