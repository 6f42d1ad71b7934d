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
"""
from __future__ import annotations

import contextlib
import fcntl
import json
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Iterator

import pytest

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


def measured_seconds(*paths: Path) -> dict[str, float]:
    """The seconds each listed test took in the measured runs (default: both files), by node id
    without the ``@GROUP`` suffix that ``--dist loadgroup`` gives an xdist_group's tests."""
    found: dict[str, float] = {}
    for path in paths or (DURATIONS, REAL_MESOS_DURATIONS):
        if path.is_file():
            found.update((plain_nodeid(k), v) for k, v in json.loads(path.read_text())["seconds"].items())
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
