"""A task's name within its job: its role and its index. Below the spec and the framework's
profile, which both name tasks (the profile never needs the spec's code to do so)."""
from __future__ import annotations

from dataclasses import dataclass

TENSORBOARD = "tensorboard"  # one more task of the job, outside the ClusterSpec (not a TensorFlow role)


@dataclass(frozen=True, order=True)
class TaskKey:
    role: str  # a TensorFlow role (RoleSpec.name); a Mesos role is ServiceSpec.mesos_role
    index: int

    @property
    def name(self) -> str:
        return f"/job:{self.role}/task:{self.index}"

    def __str__(self) -> str:
        return f"{self.role}:{self.index}"
