"""Running the suite side by side (pytest-xdist, as `make test` does): the few tests that must run
alone, and the order that keeps the tail short. tests/conftest.py applies it; what keeps the other
tests apart (a HOME and a slice of task ports per worker, ports and names per test) is described in
docs/developers/tests.md.

- ``@pytest.mark.serial(reason)``: the test runs while no other test of the session runs: it times
  something (a reply within a second, a ping period) that the load of tests beside it would
  stretch. The workers share a lock: a serial test takes it alone, every other test shares it, and
  a waiting serial test lets no new test start. Serial tests are ordered first, so that they wait
  for nothing long.
- ``@pytest.mark.xdist_group(name, reason=...)``: pytest-xdist's own marker (``--dist loadgroup``):
  the tests of a group run one after another in one worker, the others beside them; for tests that
  share something of their own (a module's cluster, fixed ports). The reason is required.
- At most as many CPU-heavy tests at once as the machine has cores (and one worker fewer than the
  run has): a worker that would start a third one on two cores takes the longest light test
  instead (``CoresScheduling``). Heavy means measured: ``cpu_seconds`` in tests/durations.json, the
  CPU its processes used (TensorFlow's start is about 3 CPU seconds a process). The light tests
  mostly wait (offers, stop signals, timers): beside two heavy ones the cores stay busy, where at
  the end of a longest-first run three of them left the cores half idle for minutes.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Iterable, Iterator

import pytest
from xdist.scheduler import LoadGroupScheduling

SERIAL = "serial"


class SessionLock:
    """A readers-writer lock over files that every worker of one session opens: ``alone()`` waits
    until no test runs and keeps new ones out (the gate), ``beside()`` is every other test."""

    def __init__(self, folder: Path) -> None:
        self._gate: IO[str] = open(folder / "side-by-side.gate", "a")
        self._tests: IO[str] = open(folder / "side-by-side.lock", "a")

    @contextlib.contextmanager
    def alone(self) -> Iterator[None]:
        fcntl.flock(self._gate, fcntl.LOCK_EX)  # no test starts from now on...
        try:
            fcntl.flock(self._tests, fcntl.LOCK_EX)  # ...and those running end
            try:
                yield
            finally:
                fcntl.flock(self._tests, fcntl.LOCK_UN)
        finally:
            fcntl.flock(self._gate, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def beside(self) -> Iterator[None]:
        fcntl.flock(self._gate, fcntl.LOCK_SH)  # not while a serial test waits or runs
        try:
            fcntl.flock(self._tests, fcntl.LOCK_SH)
        finally:
            fcntl.flock(self._gate, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(self._tests, fcntl.LOCK_UN)


def reason_missing(item: pytest.Item) -> str | None:
    """Why the item's side-by-side markers are incomplete (None when they are not)."""
    serial = item.get_closest_marker(SERIAL)
    if serial is not None and not (serial.args or serial.kwargs.get("reason")):
        return ("serial without a reason: say what it times that tests beside it would stretch, "
                "@pytest.mark.serial('...') (docs/developers/tests.md)")
    group = item.get_closest_marker("xdist_group")
    if group is not None and not group.kwargs.get("reason"):
        return (f"xdist_group({', '.join(map(repr, group.args))}) without reason='...': say why these tests "
                "cannot run side by side with the others (docs/developers/tests.md)")
    return None


# The measured runs (tools/test_durations.py writes them): `make test`'s, and the real-Mesos suite's
# (`make test-real-mesos`, not part of make test). Where neither lists a test: guessed from what it starts.
DURATIONS = Path(__file__).resolve().parent / "durations.json"
REAL_MESOS_DURATIONS = DURATIONS.with_name("durations-real-mesos.json")
GUESS_S = {"e2e": 30.0, "chaos": 30.0, "slow": 3.0, "zookeeper": 3.0, "chromium": 3.0}
PROTOCOL_S, UNIT_S = 1.0, 0.1


def measured_seconds(*paths: Path, key: str = "seconds") -> dict[str, float]:
    """The seconds each listed test took in the measured runs (default: both files; ``key``
    ``cpu_seconds``: the CPU it used), by node id without the ``@GROUP`` suffix that ``--dist
    loadgroup`` gives an xdist_group's tests."""
    found: dict[str, float] = {}
    for path in paths or (DURATIONS, REAL_MESOS_DURATIONS):
        if path.is_file():
            found.update((plain_nodeid(k), v) for k, v in json.loads(path.read_text()).get(key, {}).items())
    return found


def plain_nodeid(nodeid: str) -> str:
    """``nodeid`` without xdist's ``@GROUP`` suffix (an ``@`` inside a parameter's brackets stays)."""
    at = nodeid.rfind("@")
    return nodeid[:at] if at > nodeid.rfind("]") and at > nodeid.rfind("::") else nodeid


def group_of(item: pytest.Item) -> str | None:
    """The item's xdist_group name (None when it has none)."""
    group = item.get_closest_marker("xdist_group")
    if group is None:
        return None
    return str(group.args[0] if group.args else group.kwargs.get("name", "default"))


def group_seconds(items: list[pytest.Item], measured: Mapping[str, float]) -> dict[str, float]:
    """Each xdist_group's expected seconds: its tests' together, as one worker runs them in a row."""
    totals: dict[str, float] = {}
    for item in items:
        if (group := group_of(item)) is not None:
            totals[group] = totals.get(group, 0.0) + expected_seconds(item, measured)
    return totals


def expected_seconds(item: pytest.Item, measured: Mapping[str, float]) -> float:
    """How long the test is expected to take: as measured, else guessed from what it starts."""
    nodeid = getattr(item, "nodeid", None)
    if nodeid in measured:
        return measured[nodeid]
    if item.get_closest_marker("unit"):
        return UNIT_S
    return max((s for marker, s in GUESS_S.items() if item.get_closest_marker(marker)), default=PROTOCOL_S)


def order(item: pytest.Item, measured: Mapping[str, float],
          groups: Mapping[str, float] = {}) -> tuple[int, float]:
    """The order of a run side by side: serial tests first (they wait for nothing long there), then
    the longest first, so that the last tests to start are short ones and no worker ends the run
    alone with a long one. An xdist_group's tests count as one unit of their total seconds
    (``groups``, from group_seconds): one worker takes the whole group where its first test stands
    (``--no-loadscope-reorder`` keeps this order; xdist's default puts groups first by test count)."""
    group = group_of(item)
    seconds = groups[group] if group in groups else expected_seconds(item, measured)
    return (0 if item.get_closest_marker(SERIAL) else 1, -seconds)


# A test is heavy when it used this many CPU seconds: about two TensorFlow starts.
HEAVY_CPU_S = 6.0
CPU_ENV = "TFMESOS_TEST_CPU"


_CPUACCT = Path("/sys/fs/cgroup/cpuacct")  # cgroup v1's CPU accounting (root may make groups)
_own_group: list[Path | None] = []


def _cpuacct_group() -> Path | None:
    """A cpuacct cgroup that this process and everything it starts from now on belong to: their
    CPU, orphans included, which os.times() loses (a task left to its agent, a restarted master's
    executors). None where there is none to make."""
    if not _own_group:
        group: Path | None = _CPUACCT / f"tfmesos-test-{os.getpid()}"
        try:
            group.mkdir(exist_ok=True)
            (group / "cgroup.procs").write_text(str(os.getpid()))
        except OSError:
            group = None
        _own_group.append(group)
    return _own_group[0]


def release_cpu_group() -> None:
    """Leave this process's cpuacct group and remove it (kept if something still runs in it)."""
    if _own_group and _own_group[0] is not None:
        try:
            (_CPUACCT / "cgroup.procs").write_text(str(os.getpid()))
            _own_group[0].rmdir()
        except OSError:
            pass


def cpu_seconds() -> float:
    """The CPU seconds of this process and of what it started: its cpuacct group's where it has one,
    else its own and its ended children's (theirs include their own ended children)."""
    group = _cpuacct_group()
    if group is not None:
        return int((group / "cpuacct.usage").read_text()) / 1e9
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


@contextlib.contextmanager
def cpu_recorded(nodeid: str) -> Iterator[None]:
    """With TFMESOS_TEST_CPU naming a file, append the CPU seconds of what runs inside (a test), and
    when it started and ended (seconds since the epoch), for tools/test_durations.py --cpu."""
    out = os.environ.get(CPU_ENV)
    before, start = (cpu_seconds(), time.time()) if out else (0.0, 0.0)
    try:
        yield
    finally:
        if out:
            with open(out, "a") as f:
                f.write(f"{cpu_seconds() - before:.2f}\t{nodeid}\t{start:.2f}\t{time.time():.2f}"
                        f"\t{os.environ.get('PYTEST_XDIST_WORKER', '')}\n")


def heavy_at_once(workers: int, cores: int | None) -> int:
    """How many heavy tests may run at once: one per core, and one worker left for the light ones."""
    return max(1, min(workers - 1, cores or 1))


def pick_unit(queue: Iterable[tuple[str, bool]], heavy_elsewhere: int, at_once: int) -> str:
    """The work unit a worker takes next, from the queue in its order as (scope, heavy) pairs: the
    first, unless ``at_once`` heavy ones already run elsewhere and it is heavy; then the first light
    one; the first when none is light (the queue must not be empty)."""
    first = None
    for scope, heavy in queue:
        if first is None:
            first = scope
            if heavy_elsewhere < at_once:
                break
        if not heavy:
            return scope
    assert first is not None, "an empty queue"
    return first


class CoresScheduling(LoadGroupScheduling):
    """``--dist loadgroup``'s scheduler, whose worker takes the unit ``pick_unit`` picks, and is sent
    one unit when it is down to its last (pytest-xdist sends more ahead; the pick is better late)."""

    def __init__(self, config: pytest.Config, log, heavy: frozenset[str], cores: int | None) -> None:
        super().__init__(config, log)
        self._heavy_ids, self._cores = heavy, cores
        self._heavy_scope: dict[str, bool] = {}
        self._heavy_pending: dict[object, set[str]] = {}  # node -> its heavy units not yet done

    def _is_heavy(self, scope: str, work_unit: Mapping[str, bool]) -> bool:
        if scope not in self._heavy_scope:
            self._heavy_scope[scope] = any(plain_nodeid(n) in self._heavy_ids for n in work_unit)
        return self._heavy_scope[scope]

    def _assign_work_unit(self, node) -> None:
        elsewhere = sum(1 for other, units in self._heavy_pending.items() if other is not node and units)
        at_once = heavy_at_once(len(self.nodes), self._cores)
        scope = pick_unit(((s, self._is_heavy(s, w)) for s, w in self.workqueue.items()), elsewhere, at_once)
        self.workqueue.move_to_end(scope, last=False)  # the base class takes the queue's first
        if self._is_heavy(scope, self.workqueue[scope]):
            self._heavy_pending.setdefault(node, set()).add(scope)
        super()._assign_work_unit(node)

    def mark_test_complete(self, node, item_index: int, duration: float = 0) -> None:
        nodeid = self.registered_collections[node][item_index]
        scope = self._split_scope(nodeid)
        work_unit = self.assigned_work[node][scope]
        work_unit[nodeid] = True
        if all(work_unit.values()):
            self._heavy_pending.get(node, set()).discard(scope)
        self._reschedule(node)

    def remove_node(self, node):
        self._heavy_pending.pop(node, None)
        return super().remove_node(node)

    def _reschedule(self, node) -> None:
        if node.shutting_down:
            return
        if not self.workqueue:
            node.shutdown()
            return
        if self._pending_of(self.assigned_work[node]) > 1:  # the one it runs and the one after it
            return
        self._assign_work_unit(node)


def make_scheduler(config: pytest.Config, log) -> CoresScheduling:
    heavy = frozenset(k for k, v in measured_seconds(DURATIONS, key="cpu_seconds").items() if v >= HEAVY_CPU_S)
    return CoresScheduling(config, log, heavy, os.cpu_count())
