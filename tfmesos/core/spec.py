"""The job as plain, immutable data: what the core decides over (built from options by
``tfmesos.options.jobspec``; nothing here reads options or refuses input). The rules of the
framework its tasks run are given to it by whoever builds it (``JobSpec.profile``): the plain job
data names no framework."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from .profile import FrameworkProfile
from .task_key import TENSORBOARD, TaskKey  # noqa: F401 - TENSORBOARD: callers import the spec's names here

if TYPE_CHECKING:
    from .secrets import SecretUse

# Overhead of the tfmesos executor that wraps every task (a small Python process).
EXECUTOR_CPUS = 0.1
EXECUTOR_MEM = 64.0


_EPS = 1e-6


def add(into: dict[str, float], more: Mapping[str, float], times: float = 1.0) -> dict[str, float]:
    """``into`` plus ``times`` x ``more``, name by name (in place; returned for chaining)."""
    for name, value in more.items():
        into[name] = into.get(name, 0.0) + times * value
    return into


class Resources(Mapping[str, float]):
    """Scalar resources by name (Mesos allows any: cpus, mem, fpgas, a licence count), zeros left
    out. Immutable and hashable, equal whatever the order they were given in: placement groups the
    tasks of one demand by it. What a person reads orders the names itself (core/placement/fit.py's names_of).

    Generic code iterates the names. cpus/mem/disk/gpus are read-only by convention attributes
    for the places Mesos (or the executor's overhead) treats them specially, and the positional
    constructor keeps the old calls (``Resources(1, 1024, gpus=1)``); ``Resources.of`` takes any map.
    """

    __slots__ = ("_map", "cpus", "mem", "disk", "gpus")
    cpus: float
    mem: float
    disk: float
    gpus: int

    def __init__(self, cpus: float = 0.0, mem: float = 0.0, disk: float = 0.0, gpus: float = 0.0,
                 scalars: Mapping[str, float] | None = None):
        given = {"cpus": cpus, "mem": mem, "disk": disk, "gpus": gpus}  # the usual four first
        for name, value in (scalars or {}).items():
            given[name] = given.get(name, 0.0) + value
        self._fill(given)

    @classmethod
    def of(cls, scalars: Mapping[str, float]) -> "Resources":
        made = cls.__new__(cls)  # every offer comes through here: no keyword merging
        made._fill(scalars)
        return made

    def _fill(self, scalars: Mapping[str, float]) -> None:
        # In the order given, numbers as given: every offer comes through here, so nothing more.
        ordered = {name: value for name, value in scalars.items() if value}
        self._map = ordered
        # Plain attributes, not properties: placement reads them for every offer.
        self.cpus = ordered.get("cpus", 0.0)
        self.mem = ordered.get("mem", 0.0)
        self.disk = ordered.get("disk", 0.0)
        self.gpus = int(ordered.get("gpus", 0.0))  # Mesos hands out GPUs whole

    def items(self):  # type: ignore[override]  # the dict's own views: placement iterates them per offer
        return self._map.items()

    def keys(self):  # type: ignore[override]
        return self._map.keys()

    def values(self):  # type: ignore[override]
        return self._map.values()

    def __getitem__(self, name: str) -> float:
        return self._map[name]

    def get(self, name: str, default: float = 0.0) -> float:  # type: ignore[override]
        """The amount of ``name``; 0 when absent (nothing of it), not None."""
        return self._map.get(name, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._map)

    def __len__(self) -> int:
        return len(self._map)

    def __hash__(self) -> int:
        return hash(frozenset(self._map.items()))  # equal in any order; few are hashed (a demand per role)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Resources):
            return self._map == other._map
        return NotImplemented

    def __repr__(self) -> str:
        return f"Resources({self._map!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Resources, (0.0, 0.0, 0.0, 0.0, self._map))

    def __add__(self, other: Mapping[str, float]) -> "Resources":
        return Resources(scalars=add(dict(self._map), other))

    def __sub__(self, other: Mapping[str, float]) -> "Resources":
        return self + {name: -value for name, value in other.items()}

    def shortfall(self, have: Mapping[str, float]) -> "Resources":
        """What of this is missing from ``have`` (nothing: it fits)."""
        return Resources(scalars={name: want - have.get(name, 0.0) for name, want in self._map.items()
                                  if want > have.get(name, 0.0) + _EPS})

    def fits_in(self, have: Mapping[str, float]) -> bool:
        return all(want <= have.get(name, 0.0) + _EPS for name, want in self._map.items())


class RestartPolicy(StrEnum):
    """Whether a role's task that ended is relaunched (core/job/retry_policy.py decides): Kubeflow's names."""

    NEVER = "Never"
    ON_FAILURE = "OnFailure"
    ALWAYS = "Always"
    EXIT_CODE = "ExitCode"  # exit codes 1-127 are permanent, 128-255 (a signal) and infrastructure losses retryable


@dataclass(frozen=True)
class RoleSpec:
    name: str
    count: int
    resources: Resources
    command: str | None  # None: run the built-in TensorFlow server
    env: tuple[tuple[str, str], ...] = ()
    restart_policy: RestartPolicy = RestartPolicy.NEVER
    max_restarts: int = 3
    job_command: bool = False  # its command is the job's: the role gave none of its own

    @functools.cached_property  # asked per task per placement: built once (two Resources a task otherwise)
    def demand(self) -> Resources:
        """What one task takes from an offer: the task plus its executor."""
        return self.resources + Resources(EXECUTOR_CPUS, EXECUTOR_MEM)


@dataclass(frozen=True)
class Volume:
    """A host path the tasks see at container_path (Mesos ContainerInfo.Volume)."""
    container_path: str
    host_path: str
    mode: str = "RW"


@dataclass(frozen=True)
class Policies:
    success: str = "chief"
    max_job_restarts: int = 10
    backoff_seconds: float = 1.0
    backoff_max_seconds: float = 30.0
    startup_timeout_seconds: float = 300.0
    placement_timeout_seconds: float = 120.0
    queue_timeout_seconds: float = 0.0  # how long a job that fits but finds no room waits; 0: no bound
    active_deadline_seconds: float = 0.0
    stop_grace_seconds: float = 30.0  # SIGTERM to SIGKILL, the TaskInfo's KillPolicy: time to save at the step
    maintenance_margin_seconds: float = 300.0  # move off a machine this long before its window opens


@dataclass(frozen=True)
class ServiceSpec:
    name: str
    user: str = ""
    mesos_role: str = "*"  # options' service.role: a Mesos role, never a TensorFlow one (RoleSpec)
    principal: str = ""
    revocable: bool = False  # use revocable resources too (REVOCABLE_RESOURCES)
    failover_timeout: float = 604800.0
    zk: str = ""
    state_dir: str = ""
    api_port: int = 0
    api_token_reads: bool = False  # the API token guards reading too

    @property
    def mesos_roles(self) -> tuple[str, ...]:
        """The Mesos roles the framework subscribes with (``mesos_role`` may list several, comma-separated)."""
        return tuple(part.strip() for part in self.mesos_role.split(","))


@dataclass(frozen=True)
class JobSpec:
    service: ServiceSpec
    roles: tuple[RoleSpec, ...]
    policies: Policies = field(default_factory=Policies)
    workdir: str = ""
    env: tuple[tuple[str, str], ...] = ()
    uris: tuple[str, ...] = ()
    image: str = ""
    python: str = ""
    checkpoint_dir: str = ""
    volumes: tuple["Volume", ...] = ()
    secrets: tuple["SecretUse", ...] = ()  # job.secret_env, then job.secret_files: names, never values
    # Cluster members that are not Mesos tasks (the caller of tfmesos.cluster(), tfrun's local
    # worker 0): they are in every task's ClusterSpec but nothing is launched for them.
    external: tuple[tuple[TaskKey, str], ...] = ()
    # Tasks whose output is streamed to the scheduler; None: the task that decides success.
    streamed: tuple[TaskKey, ...] | None = None
    # The rules of the framework the tasks run, which the lifecycle asks (options/jobspec.py gives
    # TensorFlow's, core/tensorflow/profile.py): no default, so the plain data names no framework.
    profile: FrameworkProfile = field(kw_only=True, repr=False)

    def role(self, name: str) -> RoleSpec | None:
        return next((r for r in self.roles if r.name == name), None)

    def count(self, name: str) -> int:
        role = self.role(name)
        return role.count if role else 0

    def task_count(self) -> int:
        """``len(task_keys())`` without listing them: a count may be huge (refused by preflight
        later), and 10^11 keys would exhaust memory first."""
        outside = sum(1 for key, _ in self.external if key.index < self.count(key.role))
        return sum(r.count for r in self.roles) - outside

    def task_keys(self) -> list[TaskKey]:
        outside = {key for key, _ in self.external}
        return [k for r in self.roles for i in range(r.count) if (k := TaskKey(r.name, i)) not in outside]

    @functools.cached_property  # asked on every task end: built once (1,000 TaskKeys otherwise)
    def success_keys(self) -> tuple[TaskKey, ...]:
        """The tasks whose exit 0 ends the job successfully (none: it runs until stopped)."""
        return self.profile.success_keys(self)

    def decides_success(self, key: TaskKey) -> bool:
        return key in self._success_key_set

    @functools.cached_property
    def _success_key_set(self) -> frozenset[TaskKey]:
        return frozenset(self.success_keys)

    @property
    def streamed_keys(self) -> tuple[TaskKey, ...]:
        return self.success_keys[:1] if self.streamed is None else self.streamed

    @property
    def gpus_needed(self) -> bool:
        return any(r.resources.gpus for r in self.roles if r.count)
