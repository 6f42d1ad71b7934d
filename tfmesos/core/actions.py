"""What the core asks the shell to do. The shell turns each into a Mesos call (or an exit)."""
from __future__ import annotations

from dataclasses import dataclass

from .phase import SUCCEEDED, JobPhase
from .spec import Resources, TaskKey


@dataclass(frozen=True)
class TaskLaunch:
    key: TaskKey
    task_id: str
    port: int
    resources: Resources  # task plus executor, as placed
    restarts: int


@dataclass(frozen=True)
class Launch:
    offer_id: str
    agent_id: str
    hostname: str
    tasks: tuple[TaskLaunch, ...]
    # The ClusterSpec message each of its TaskInfos carries (a small gang: cluster_spec_sync.
    # inline_cluster_spec); None: each executor asks for it.
    cluster_spec: dict | None = None


@dataclass(frozen=True)
class Decline:
    offer_ids: tuple[str, ...]
    refuse_seconds: float


@dataclass(frozen=True)
class Kill:
    task_id: str
    agent_id: str


@dataclass(frozen=True)
class Notify:
    """Tell a task of a planned stop (its executor writes the notice file: docs/developers/
    architecture.md, "Planned stop: the notice"). A Kill that follows gives its SIGTERM."""

    task_id: str
    agent_id: str
    reason: str  # "agent h1 draining"
    kind: str  # one of tfmesos.task.notice.KINDS


@dataclass(frozen=True)
class AcceptInverseOffers:
    """Tell Mesos the job gives these agents back for their maintenance windows: nothing of it
    runs there any more (advisory to Mesos: it shows in /maintenance/status)."""

    inverse_offer_ids: tuple[str, ...]


@dataclass(frozen=True)
class SendClusterSpec:
    task_id: str  # the executor id is the task id: one executor per task
    agent_id: str
    message: dict


@dataclass(frozen=True)
class Persist:
    """Write the job's state before carrying out the actions after it: they (or the transition
    that made them) are what a restarted scheduler could not learn again from Mesos."""


@dataclass(frozen=True)
class Revive:
    pass


@dataclass(frozen=True)
class Suppress:
    pass


@dataclass(frozen=True)
class Reconcile:
    task_ids: tuple[str, ...]  # empty: implicit reconciliation


@dataclass(frozen=True)
class Done:
    end: JobPhase  # the job's last phase: SUCCEEDED, FAILED, KILLED (stopped on request) or CLOSED
    cause: str

    @property
    def succeeded(self) -> bool:
        return self.end == SUCCEEDED


Action = (Persist | Launch | Decline | Kill | Notify | AcceptInverseOffers | SendClusterSpec | Revive | Suppress | Reconcile
          | Done)
