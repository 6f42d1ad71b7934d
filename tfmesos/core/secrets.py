"""Secrets for the job's tasks, as plain data: what each task is given and where the value comes from.

A secret reaches a task as an environment variable (``job.secret_env``, ``NAME=SOURCE``) or as a
file in its sandbox (``job.secret_files``, ``PATH=SOURCE``). The source decides how it travels:

- a secret store's name (``team-a/aws-key``, DC/OS' secret paths): a Mesos ``Secret`` of type
  REFERENCE, resolved by the agent's secret resolver; tfmesos never sees the value;
- ``env:VAR`` or ``file:PATH``: a value the scheduler reads at its start. It travels in the task's
  payload (TaskInfo.data) and the executor sets the variable, or writes the file (0600, outside
  the sandbox, which links to it: the agent's /files API does not follow such a link). Not as a
  Mesos VALUE secret: a real Mesos 1.12 master serves those, base64, in ``/state``,
  ``/frameworks`` and the operator API's GET_STATE/GET_EXECUTORS (measured), and a file needs the
  agent's ``volume/secret`` isolator (linux launcher and ``filesystem/linux``), which a POSIX
  agent lacks. The master never shows TaskInfo.data.

The spec holds names only; the values the scheduler read (``SecretValues``, filled by
``tfmesos.scheduler.secret_values``) live in its memory and are never shown.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Literal, Mapping

ENV_SOURCE = "env:"
FILE_SOURCE = "file:"


@dataclass(frozen=True)
class SecretSource:
    kind: Literal["reference", "env", "file"]
    name: str  # the secret store's name, the scheduler's variable, or the scheduler's file

    @property
    def by_reference(self) -> bool:
        """Resolved by the agent (a Mesos REFERENCE secret), not read by the scheduler."""
        return self.kind == "reference"

    def __str__(self) -> str:
        return self.name if self.kind == "reference" else f"{self.kind}:{self.name}"


@dataclass(frozen=True)
class SecretUse:
    """One secret given to every task: as variable ``target`` (``as_file`` False) or as the file
    ``target`` under the sandbox."""
    target: str
    source: SecretSource
    as_file: bool = False

    @property
    def where(self) -> str:
        """The option it came from, for messages."""
        return "$.job.secret_files" if self.as_file else "$.job.secret_env"


@dataclass(frozen=True)
class SecretValues:
    """Each read secret's value, by its use. Compared and shown by the names only."""
    values: Mapping[SecretUse, bytes] = field(default_factory=dict, repr=False, compare=False)

    def __repr__(self) -> str:
        return f"SecretValues({sorted(u.target for u in self.values)})"

    def env(self) -> dict[str, str]:
        return {u.target: v.decode("utf-8") for u, v in self.values.items() if not u.as_file}

    def files(self) -> dict[str, bytes]:
        return {u.target: v for u, v in self.values.items() if u.as_file}


NO_VALUES = SecretValues()


def parse_source(text: str) -> SecretSource:
    """``env:VAR``, ``file:PATH`` or a secret store's name (anything else)."""
    if text.startswith(ENV_SOURCE):
        return SecretSource("env", text[len(ENV_SOURCE):])
    if text.startswith(FILE_SOURCE):
        return SecretSource("file", text[len(FILE_SOURCE):])
    return SecretSource("reference", text)


def references(uses: tuple[SecretUse, ...]) -> tuple[SecretUse, ...]:
    return tuple(u for u in uses if u.source.by_reference)


def read_by_scheduler(uses: tuple[SecretUse, ...]) -> tuple[SecretUse, ...]:
    return tuple(u for u in uses if not u.source.by_reference)


# Sandbox entries Mesos or the tfmesos executor write: a secret file must not take their place.
SANDBOX_OWN = frozenset({"stdout", "stderr", "clusterspec.json", ".clusterspec.json.tmp", "progress.fifo", "tmp"})


def secret_problems(uses: tuple[SecretUse, ...], env_given: dict[str, str],
                    reserved_env: Callable[[str], object]) -> list[str]:
    """What cannot work across fields: a variable tfmesos sets itself or that an ``env`` option
    sets too (``env_given``: name -> where), a target given twice, a file outside the sandbox or
    in place of one of the sandbox's own files."""
    problems: list[str] = []
    seen: set[tuple[bool, str]] = set()
    for use in uses:
        where, target = use.where, use.target
        if (use.as_file, target) in seen:
            problems.append(f"{where}: {target} is given twice: expected each {'file' if use.as_file else 'variable'} once")
        seen.add((use.as_file, target))
        if not use.as_file:
            if reserved_env(target):
                problems.append(f"{where}: {target} is set by tfmesos for every task: expected another variable name")
            elif target in env_given:
                problems.append(f"{where}: {target} is set by {env_given[target]} too: expected it in one place")
            continue
        parts = target.split("/")
        if any(p in ("", ".", "..") for p in parts):
            problems.append(f"{where}: {target!r} is not a plain relative path: expected a file name under the "
                            "sandbox (no '.', '..' or empty segments, no trailing '/')")
        elif parts[0] in SANDBOX_OWN:
            problems.append(f"{where}: {target!r} would replace the sandbox's own {parts[0]!r}: expected another path")
    return problems
