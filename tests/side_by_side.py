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


# Where a test's expected seconds come from when tests/durations.json does not list it: what it starts.
DURATIONS = Path(__file__).resolve().parent / "durations.json"
GUESS_S = {"e2e": 30.0, "chaos": 30.0, "slow": 3.0, "zookeeper": 3.0, "chromium": 3.0}
PROTOCOL_S, UNIT_S = 1.0, 0.1


def measured_seconds(path: Path = DURATIONS) -> dict[str, float]:
    """The seconds each listed test took in a measured run (tools/test_durations.py writes the file)."""
    return json.loads(path.read_text())["seconds"] if path.is_file() else {}


def expected_seconds(item: pytest.Item, measured: Mapping[str, float]) -> float:
    """How long the test is expected to take: as measured, else guessed from what it starts."""
    nodeid = getattr(item, "nodeid", None)
    if nodeid in measured:
        return measured[nodeid]
    if item.get_closest_marker("unit"):
        return UNIT_S
    return max((s for marker, s in GUESS_S.items() if item.get_closest_marker(marker)), default=PROTOCOL_S)


def order(item: pytest.Item, measured: Mapping[str, float]) -> tuple[int, float]:
    """The order of a run side by side: serial tests first (they wait for nothing long there), then
    the longest first, so that the last tests to start are short ones and no worker ends the run
    alone with a long one."""
    return (0 if item.get_closest_marker(SERIAL) else 1, -expected_seconds(item, measured))
