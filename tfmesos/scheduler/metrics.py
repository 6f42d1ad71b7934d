"""The scheduler's Prometheus metrics (``GET /metrics``), one registry per job.

Counters are counted as the scheduler's shell sees events happen, classified here (a task's end
as a failure or not, a launch as a relaunch and why); the job's phase, placement wait and last
reported progress are read from its snapshot when scraped. The counts are plain numbers until
then: prometheus_client (and the http.server, wsgiref and urllib it loads) is imported at the
first scrape, not at every scheduler's start.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Iterator

from ..core.phase import PHASES
from ..core.task_state import LIVE, TASK_FINISHED
from ..core.spec import TaskKey
from ..core.status import Progress, StatusSnapshot


class _Count:
    """One Prometheus counter (``name`` exposed as ``name_total``), by label values."""

    def __init__(self, name: str, help_text: str, labels: tuple[str, ...] = ()):
        self.name, self.help, self.label_names = name, help_text, labels
        self.created = time.time()
        self.values: dict[tuple[str, ...], float] = {} if labels else {(): 0.0}

    def labels(self, *values: str) -> "_Labelled":
        assert len(values) == len(self.label_names), (self.name, values)
        return _Labelled(self, values)

    def inc(self, amount: float = 1.0) -> None:
        self.values[()] += amount

    def family(self) -> Any:
        from prometheus_client.core import CounterMetricFamily

        family = CounterMetricFamily(self.name, self.help, labels=list(self.label_names))
        for values, count in sorted(self.values.items()):
            family.add_metric(list(values), count, created=self.created)
        return family


class _Labelled:
    def __init__(self, count: _Count, values: tuple[str, ...]):
        self._count, self._values = count, values

    def inc(self, amount: float = 1.0) -> None:
        values = self._count.values
        values[self._values] = values.get(self._values, 0.0) + amount


class _SnapshotCollector:
    def __init__(self, snapshot: Callable[[], StatusSnapshot], extra: Callable[[], dict[str, float]]):
        self._snapshot, self._extra = snapshot, extra

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        snap = self._snapshot()
        phase = GaugeMetricFamily("tfmesos_job_phase", "1 for the job's current phase, 0 for the others",
                                  labels=["phase"])
        for name in PHASES:
            phase.add_metric([name], 1.0 if snap.phase == name else 0.0)
        yield phase
        yield GaugeMetricFamily("tfmesos_job_restarts", "Relaunches counted against policies.max_job_restarts",
                                value=snap.job_restarts)
        tasks = GaugeMetricFamily("tfmesos_tasks", "Tasks by role and Mesos state", labels=["role", "state"])
        counts: dict[tuple[str, str], int] = {}
        for t in snap.tasks:
            counts[(t.role, t.state)] = counts.get((t.role, t.state), 0) + 1
        for (role, state), n in sorted(counts.items()):
            tasks.add_metric([role, state], n)
        yield tasks
        if snap.placement_wait is not None:
            yield GaugeMetricFamily("tfmesos_placement_wait_seconds",
                                    "How long the last whole-job placement gathered offers",
                                    value=snap.placement_wait)
        for name, value in self._extra().items():
            yield GaugeMetricFamily(f"tfmesos_{name}", name.replace("_", " "), value=value)
        progress = snap.progress or Progress()
        for field, help_text in (("step", "Last step the training reported (tfmesos.report)"),
                                 ("loss", "Last loss the training reported (tfmesos.report)"),
                                 ("total_steps", "Total steps the training reported (tfmesos.report)")):
            value = getattr(progress, field)
            if value is not None:  # a number (a value reported that is not one is a Progress metric)
                yield GaugeMetricFamily(f"tfmesos_last_{field}" if field != "total_steps" else "tfmesos_total_steps",
                                        help_text, value=float(value))


class JobMetrics:
    def __init__(self, snapshot: Callable[[], StatusSnapshot]):
        self.offers_received = _Count("tfmesos_offers_received", "Resource offers received")
        self.offers_declined = _Count("tfmesos_offers_declined", "Resource offers declined")
        self.tasks_launched = _Count("tfmesos_tasks_launched", "Task attempts launched", ("role",))
        self.tasks_failed = _Count("tfmesos_tasks_failed", "Task attempts that ended badly (not killed by tfmesos)",
                                   ("role", "reason"))
        self.tasks_relaunched = _Count(
            "tfmesos_tasks_relaunched",
            "Task attempts launched again: after a failure, asked for by a person, or with a peer or the whole job",
            ("role", "reason"))
        self._counts = (self.offers_received, self.offers_declined, self.tasks_launched, self.tasks_failed,
                        self.tasks_relaunched)
        self._snapshot = snapshot
        self._registry: Any = None  # built at the first scrape
        self._gauges: dict[str, float] = {}
        self._launched: dict[TaskKey, int] = {}  # restarts count at each task's last launch
        self._requested: set[TaskKey] = set()  # tasks a person asked to restart, not relaunched yet

    def collect(self) -> Iterator[Any]:
        """The registry's collector: the counters, then the gauges read from the snapshot."""
        for count in self._counts:
            yield count.family()
        yield from _SnapshotCollector(self._snapshot, lambda: dict(self._gauges)).collect()

    def task_ended(self, key: TaskKey, state: str, reason: str, counts: bool) -> None:
        """A task's status update; ``counts``: it ends an attempt that was live and that tfmesos
        did not kill itself (for a relaunch, or while the job finishes)."""
        label = failure_label(state, reason, counts)
        if label is not None:
            self.tasks_failed.labels(key.role, label).inc()

    def restart_requested(self, key: TaskKey) -> None:
        self._requested.add(key)

    def launched(self, key: TaskKey, restarts: int) -> None:
        """A task launched; a relaunch is counted as after a failure (its restarts grew), as asked
        for by a person, or with its peers (a whole-job or peer restart)."""
        self.tasks_launched.labels(key.role).inc()
        if key in self._launched:
            why = ("failure" if restarts > self._launched[key]
                   else "requested" if key in self._requested else "with_peers")
            self.tasks_relaunched.labels(key.role, why).inc()
        self._launched[key] = restarts
        self._requested.discard(key)

    def set_gauge(self, name: str, value: float) -> None:
        """A gauge the scheduler measures once, e.g. time_to_clusterspec_seconds."""
        self._gauges[name] = value

    def clusterspec_sent(self, seconds_since_start: float) -> None:
        """The first ClusterSpec sent: how long the job took to get there."""
        self._gauges.setdefault("time_to_clusterspec_seconds", seconds_since_start)

    def render(self) -> tuple[bytes, str]:
        from prometheus_client import CollectorRegistry, generate_latest
        from prometheus_client.exposition import CONTENT_TYPE_LATEST

        if self._registry is None:
            self._registry = CollectorRegistry(auto_describe=False)
            self._registry.register(self)
        return generate_latest(self._registry), CONTENT_TYPE_LATEST


def failure_label(state: str, reason: str, counts: bool) -> str | None:
    """The ``reason`` label of tasks_failed for a task's update, or None when it is no failure
    (still live, finished, or an end tfmesos asked for)."""
    if not counts or state in LIVE or state == TASK_FINISHED:
        return None
    return reason or state
