"""The hooks a job's lifecycle calls for what its framework decides.

``core/job/`` is generic: gang placement, relaunch with backoff, the end. What depends on the
framework the tasks run (how the tasks depend on each other, which ones end the job, which ones
serve, the order of its roles, what it cannot run) is asked of a ``FrameworkProfile``: plain
functions over the job's plain data, so a profile is tested alone and a lifecycle test can give
the job another one. TensorFlow's is ``tfmesos.core.tensorflow.profile.TENSORFLOW``, the only one
so far: whoever builds a ``JobSpec`` gives it (``JobSpec.profile``; options/jobspec.py does), and a
reader of a kept record, which has no spec, names it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping, NamedTuple, Sequence

if TYPE_CHECKING:  # the spec names its profile: the hooks see it only as a type
    from .spec import JobSpec, RoleSpec
    from .task_key import TaskKey

ClusterDict = dict[str, list[str]]


class PeerRestart(NamedTuple):
    """Restart the live tasks of ``role`` from their checkpoint, because ``why``."""

    role: str
    why: str


@dataclass(frozen=True)
class FrameworkProfile:
    """The hooks, each a plain function over the job's plain data (no state of its own)."""

    # What the job is, in the framework's words (shown in the status: "parameter_server", ...).
    mode: Callable[[JobSpec], str]
    # The tasks whose exit 0 ends the job successfully; none: it runs until stopped.
    success_keys: Callable[[JobSpec], tuple[TaskKey, ...]]
    # Whether losing this task takes the others down with it: then the whole job restarts.
    restarts_whole_job: Callable[[JobSpec, TaskKey], bool]
    # Relaunched tasks came back at new addresses while the job runs: which peers must restart.
    restart_when_moved: Callable[[JobSpec, Sequence[TaskKey]], tuple[PeerRestart, ...]]
    # Whether the job needs this task: the failure of one it does not need is noted, and the job goes on.
    essential: Callable[[JobSpec, TaskKey], bool]
    # Whether the role's tasks serve until they are stopped (they never end on their own).
    is_server: Callable[[RoleSpec], bool]
    # The cluster every task is told (role -> addresses by index), from every task's address.
    cluster: Callable[[Mapping[TaskKey, str]], ClusterDict]
    # What the framework cannot run: each problem names the option at fault and what was expected.
    problems: Callable[[JobSpec], list[str]]
    # The framework's roles in the order jobs list, show and explain their tasks (plain data).
    role_order: tuple[str, ...]
    # What the framework can run but is often a slip: each warning says what to set, and how to
    # keep the shape on purpose. The job still runs.
    warnings: Callable[[JobSpec], list[str]] = lambda spec: []
    # Whether a task's exception line says that a peer, the network or the cluster failed, not the
    # script: the same line twice in a row then does not stop relaunching (core/job/retry_policy.py).
    transient_failure: Callable[[str], bool] = lambda line: False
    # A planned stop of these tasks (core/job/planned_stop.py): the live peers that must be told
    # too, to save (or stay up while others save) without being stopped.
    told_of_stop: Callable[[JobSpec, Sequence[TaskKey]], tuple[TaskKey, ...]] = lambda spec, leaving: ()
    # Whether this task's planned exit means the job has saved: servers told and stopped may go.
    saves_for_job: Callable[[JobSpec, TaskKey], bool] = lambda spec, key: True

    def rank(self, role: str) -> int:
        """Where a role's tasks come: in ``role_order``, then any other (TensorBoard) after them."""
        return self.role_order.index(role) if role in self.role_order else len(self.role_order)
