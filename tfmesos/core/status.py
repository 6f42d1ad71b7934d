"""The status snapshot: what ``GET /v1/status`` serves, one typed and versioned definition.

The core builds it (``Job.snapshot``), the scheduler adds what only it knows (framework id,
connection, clock, master), the API serves ``to_json()``, and every reader reads this type:
``tfmesos status`` and ``logs`` parse the JSON with ``from_json``, the run's summary, the metrics
and ``tfmesos.cluster()`` take it as it is, and the status page (web/app.js) reads the same JSON
field names. ``from_json`` refuses a snapshot of a newer ``VERSION`` (a client older than the
scheduler it asks) with a line saying so; a snapshot without a version (a scheduler from before
versioning: the same fields, some of them missing) still reads.

Pure data: no I/O, nothing of options.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

VERSION = 1  # of the JSON below; raise it when a field changes meaning or goes away

Point = tuple[float, float, "float | None"]  # (seconds since the epoch, step, loss or None): core.state.series'


class NewerStatusError(ValueError):
    """A snapshot of a newer version than this tfmesos reads."""


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class Progress:
    """What a task last reported with ``tfmesos.report()`` (its values merged over its reports).

    In JSON it is one flat object: the named values below (those that are numbers) and every
    other value the training reported, under its own name (``accuracy``, ...)."""

    at: float | None = None  # when the scheduler got the last report
    step: float | None = None
    total_steps: float | None = None
    loss: float | None = None
    fraction: float | None = None  # step / total_steps, at most 1 (the job's progress only)
    metrics: dict[str, Any] = field(default_factory=dict)  # the other values reported, in the order reported

    NAMED = ("at", "step", "total_steps", "loss", "fraction")

    def to_json(self) -> dict[str, Any]:
        named = {name: getattr(self, name) for name in self.NAMED if getattr(self, name) is not None}
        return {**named, **self.metrics}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Progress":
        """Values as reported (or served): a named value that is not a number stays a metric of
        that name, so that nothing reported is lost or changes its name."""
        named = {k: v for k, v in data.items() if k in cls.NAMED and _number(v)}
        return cls(**named, metrics={k: v for k, v in data.items() if k not in named})


@dataclass(frozen=True)
class TaskStatus:
    """One task of the job (ROLE:INDEX) as the status shows it."""

    role: str
    index: int
    task_id: str = ""
    endpoint: str | None = ""  # host:port once placed
    agent_id: str = ""
    state: str = ""  # the Mesos task state, e.g. TASK_RUNNING
    restarts: int = 0  # relaunches after a failure: its own, or another task's that restarted the whole job
    requested_restarts: int = 0  # relaunches a person asked for (tfmesos restart)
    planned_stops: int = 0  # relaunches after a planned stop (an agent drained): no failure
    exit_code: int | None = None  # of its last attempt, once ended
    reason: str = ""
    message: str = ""
    exception: str = ""  # the exception line of the Python traceback that ended it, if one did
    progress: Progress | None = None  # what this task reported (tfmesos.report)

    @property
    def name(self) -> str:
        return f"{self.role}:{self.index}"

    def to_json(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["progress"] = self.progress.to_json() if self.progress is not None else None
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "TaskStatus":
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        progress = values.pop("progress", None)
        return cls(**values, progress=Progress.from_json(progress) if isinstance(progress, dict) else None)


@dataclass(frozen=True)
class StatusSnapshot:
    """The job's status at one moment, as ``GET /v1/status`` serves it."""

    name: str
    phase: str
    mode: str = ""
    succeeded: bool | None = False  # None while the job runs: not decided yet
    cause: str = ""
    job_restarts: int = 0
    clusterspec_version: int = 0
    started_at: float = 0.0
    placement_wait: float | None = None  # seconds the last whole-job placement took
    queued: str = ""  # while the job waits for room: why, with the figures (core/placement/queue.py)
    queued_since: float | None = None
    progress: Progress | None = None  # the job's: the task that decides success, else the latest report
    series: tuple[Point, ...] = ()  # the leading task's (time, step, loss) over time, for the chart
    tasks: tuple[TaskStatus, ...] = ()  # in role order, then index
    tensorboard: str | None = None  # host:port of a running TensorBoard
    events: tuple[str, ...] = ()  # the newest events, oldest first
    # What the scheduler adds (a snapshot from the core alone leaves them as they are here):
    framework_id: str | None = None
    connected: bool = False  # to the Mesos master
    now: float | None = None  # the scheduler's clock when taken
    master: str | None = None  # the Mesos master's host:port (the page links its UI)
    ended_at: float | None = None  # set once the job is over and its final status is served on
    version: int = VERSION

    def to_json(self) -> dict[str, Any]:
        """The JSON object ``GET /v1/status`` serves."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["progress"] = self.progress.to_json() if self.progress is not None else None
        out["series"] = [list(p) for p in self.series]
        out["tasks"] = [t.to_json() for t in self.tasks]
        out["events"] = list(self.events)
        return out

    @classmethod
    def from_json(cls, data: Any) -> "StatusSnapshot":
        """A snapshot as served (``to_json``); raises NewerStatusError for a newer version and
        ValueError for what is not a snapshot at all."""
        if not isinstance(data, dict) or not isinstance(data.get("name"), str) or not isinstance(data.get("phase"), str):
            raise ValueError("not a tfmesos status: expected a JSON object with a name and a phase")
        version = data.get("version", 0)  # none: served before the snapshot had a version (the same fields)
        if not isinstance(version, int) or isinstance(version, bool) or version < 0:
            raise ValueError(f"a tfmesos status with an unknown version {version!r}")
        if version > VERSION:
            raise NewerStatusError(f"the scheduler serves status version {version}, this tfmesos reads up to "
                                   f"version {VERSION}: upgrade tfmesos here (pip install -U tfmesos)")
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        progress = values.pop("progress", None)
        series = tuple(tuple(p) for p in values.pop("series", None) or ())
        tasks = tuple(TaskStatus.from_json(t) for t in values.pop("tasks", None) or ())
        events = tuple(values.pop("events", None) or ())
        values["version"] = VERSION  # an older shape reads as this one
        return cls(**values, progress=Progress.from_json(progress) if isinstance(progress, dict) else None,
                   series=series, tasks=tasks, events=events)  # type: ignore[arg-type]
