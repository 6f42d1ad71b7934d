"""A task's name within its job: its role and its index. Below the spec and the framework's
profile, which both name tasks (the profile never needs the spec's code to do so)."""
from __future__ import annotations

TENSORBOARD = "tensorboard"  # one more task of the job, outside the ClusterSpec (not a TensorFlow role)


class TaskKey:
    """Frozen, ordered, equal and hashed by (role, index): what ``dataclass(frozen=True,
    order=True)`` made, written out because every cold executor imports this class, and
    ``dataclasses`` (with ``inspect``, ``ast``, ``dis``, ``tokenize``) costs each one ~1.5 MiB and
    5-10 ms of CPU."""

    __slots__ = ("role", "index")
    role: str  # a TensorFlow role (RoleSpec.name); a Mesos role is ServiceSpec.mesos_role
    index: int

    def __init__(self, role: str, index: int) -> None:
        object.__setattr__(self, "role", role)
        object.__setattr__(self, "index", index)

    @property
    def name(self) -> str:
        return f"/job:{self.role}/task:{self.index}"

    def __str__(self) -> str:
        return f"{self.role}:{self.index}"

    def __repr__(self) -> str:
        return f"TaskKey(role={self.role!r}, index={self.index!r})"

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: a TaskKey is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: a TaskKey is frozen")

    def __reduce__(self) -> tuple[type[TaskKey], tuple[str, int]]:  # copy and pickle (__setattr__ refuses theirs)
        return TaskKey, (self.role, self.index)

    def __hash__(self) -> int:
        return hash((self.role, self.index))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not TaskKey:
            return NotImplemented
        return self.role == other.role and self.index == other.index  # type: ignore[attr-defined]

    def __lt__(self, other: TaskKey) -> bool:
        if other.__class__ is not TaskKey:
            return NotImplemented
        return (self.role, self.index) < (other.role, other.index)

    def __le__(self, other: TaskKey) -> bool:
        if other.__class__ is not TaskKey:
            return NotImplemented
        return (self.role, self.index) <= (other.role, other.index)

    def __gt__(self, other: TaskKey) -> bool:
        if other.__class__ is not TaskKey:
            return NotImplemented
        return (self.role, self.index) > (other.role, other.index)

    def __ge__(self, other: TaskKey) -> bool:
        if other.__class__ is not TaskKey:
            return NotImplemented
        return (self.role, self.index) >= (other.role, other.index)
