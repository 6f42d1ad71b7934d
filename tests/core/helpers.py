"""Plain-data builders for core tests."""
from __future__ import annotations

from tfmesos.core.state.record import JobState, Transient
from tfmesos.core.state.tasks import TaskRecord
from tfmesos.core.placement.offers import Offer
from tfmesos.options.load import resolve_options
from tfmesos.core.spec import JobSpec, Resources
from tfmesos.options.jobspec import job_spec_from_options


def spec_of(**roles: dict) -> JobSpec:
    options = {"service": {"name": "t"}, "job": {"command": "python train.py"}, "roles": roles}
    return job_spec_from_options(resolve_options(options))


def offer(i: int, cpus: float = 4, mem: float = 8192, gpus: int = 0, ports: tuple = ((31000, 31099),), disk: float = 0,
          **others: float) -> Offer:
    """Offer i of agent S<i>; ``others``: any other scalar by name (fpgas=2)."""
    return Offer(id=f"O{i}", agent_id=f"S{i}", hostname=f"h{i}", scalars=Resources(cpus, mem, disk, gpus, others),
                 ports=ports)


def state_of(spec: JobSpec, now: float = 0.0) -> tuple[JobState, Transient]:
    """A new job as the decision modules see it, without the Job facade: its record and transient state."""
    job = JobState(spec=spec, tasks={key: TaskRecord(key) for key in spec.task_keys()}, started_at=now, placing_since=now)
    return job, Transient()
