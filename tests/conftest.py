"""Fixtures shared across the suite, and the markers that pick parts of it.

A test's markers come from what it starts (tests/starts.py reads its body, its helpers and its
fixtures), not from its folder:

- one tier: ``unit`` starts nothing (no process, no socket); ``protocol`` starts processes or
  opens sockets without running a TensorFlow job (the embedded master, an HTTP server, a
  ``tfmesos`` command); ``e2e`` and ``chaos`` are whole jobs (tests/e2e, tests/chaos, or a test
  importing TensorFlow itself). A tier written on a test is kept, except ``unit`` on a test that
  starts something: that test fails, naming what it starts. And at run time, a ``unit`` test
  that binds or connects a socket, or starts a process, from its own thread fails, naming it
  (what the reader could not see: teach ``tests/starts.py`` the entry point).
- what it starts, one marker each: ``subprocess``, ``socket``, ``localmaster``, ``zookeeper``
  (the ``zk`` fixture), ``chromium``, ``tensorflow``.

Nothing is skipped unless asked for with ``-m``: a missing ZooKeeper fails.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path

import pytest

from localmesos import ports
from tests import side_by_side, starts, zookeeper
from tfmesos.mesos import tcp

_TESTS = Path(__file__).resolve().parent


def xdist_worker() -> tuple[int, int] | None:
    """(index, count) of this pytest-xdist worker (``-n``): None in a serial run."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not name.startswith("gw"):
        return None
    return int(name[2:]), int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))


# Where the suite's embedded masters pick their agents' task ports: the default range less
# 31000-32999, which the real-Mesos suite's agents offer (tests/e2e/real_mesos.py).
SUITE_TASK_PORTS = (ports.LOW, 31000)


def worker_task_ports(worker: tuple[int, int] | None) -> str:
    """TFMESOS_LOCAL_PORTS for a worker: a slice of its own of SUITE_TASK_PORTS, so that the masters
    of tests side by side never hand out the same ports (a range is picked at random and checked
    free when a master starts, but tasks bind their ports later)."""
    low, high = SUITE_TASK_PORTS
    index, count = worker or (0, 1)
    size = (high - low) // count
    return f"{low + index * size}-{low + (index + 1) * size - 1}"


def pip_settings(real_home: Path, env: Mapping[str, str]) -> dict[str, str]:
    """What keeps the pip of the tests that install (the wheel into an empty venv, the sdists the
    pymesos installer fetches) set up as the user's, under the suite's own HOME: the user's pip
    config (an index or a mirror of this machine's) and pip's cache. Without them each such test
    downloads TensorFlow from the public index: 15 minutes here instead of 2."""
    settings = {}
    if "PIP_CONFIG_FILE" not in env:
        config = env.get("XDG_CONFIG_HOME") or str(real_home / ".config")
        found = [p for p in (Path(config) / "pip" / "pip.conf", real_home / ".pip" / "pip.conf") if p.is_file()]
        if found:
            settings["PIP_CONFIG_FILE"] = str(found[0])
    if "PIP_CACHE_DIR" not in env:
        settings["PIP_CACHE_DIR"] = str(Path(env.get("XDG_CACHE_HOME") or real_home / ".cache") / "pip")
    return settings


@pytest.hookimpl(trylast=True)  # after pytest's own: its temporary folders are set up
def pytest_configure(config):
    config.addinivalue_line("markers", "serial(reason): runs while no other test runs, under pytest-xdist too "
                                       "(it times what tests beside it would stretch: tests/side_by_side.py)")
    # This run's folder (pytest's basetemp; side by side, the one that holds every worker's) holds
    # what its tests make: tmp_path, and through TMPDIR the work dirs of the embedded masters that
    # `tfmesos run` and `tfmesos.cluster()` start, so that their sandboxes, and the processes that
    # run in them, can be told from those of another run on this machine (tests/e2e/harness.py).
    basetemp = config._tmp_path_factory.getbasetemp()
    root = basetemp.parent if xdist_worker() is not None else basetemp
    scratch = root / f"tmp-{os.environ.get('PYTEST_XDIST_WORKER') or 'main'}"
    scratch.mkdir(exist_ok=True)
    os.environ["TMPDIR"], tempfile.tempdir = str(scratch), None
    os.environ["TFMESOS_TEST_ROOT"] = str(root)
    # A home of the suite's own: `tfmesos run --master` keeps state under ~/.tfmesos by default,
    # and a record left by one test (or by the user's own jobs) must not meet another. Each
    # xdist worker is a process of its own and gets its own.
    config._tfmesos_home = tempfile.mkdtemp(prefix="tfmesos-test-home-")
    config._tfmesos_real_home = os.environ.get("HOME")
    os.environ.update(pip_settings(Path(config._tfmesos_real_home or "/nonexistent"), os.environ))
    os.environ["HOME"] = config._tfmesos_home
    # Every embedded master a test starts (`tfmesos run`, `tfmesos.cluster()`, `local-master
    # --first-port 0`) inherits this: the user-facing variable, not a hook of the suite's own.
    os.environ[ports.ENV] = worker_task_ports(xdist_worker())


def pytest_unconfigure(config):
    side_by_side.release_cpu_group()
    if getattr(config, "_tfmesos_real_home", None) is not None:
        os.environ["HOME"] = config._tfmesos_real_home
    shutil.rmtree(getattr(config, "_tfmesos_home", ""), ignore_errors=True)


_CONFLICT = pytest.StashKey[str]()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        path = Path(str(item.fspath)).resolve()
        if _TESTS not in path.parents:
            continue
        rel = path.relative_to(_TESTS)
        folder = rel.parts[0] if len(rel.parts) > 1 else ""
        function = getattr(item, "function", None)
        if function is None:  # not a Python test: what it starts is unknown, so it is no unit test
            if not any(item.get_closest_marker(m) for m in starts.TIERS):
                item.add_marker(getattr(pytest.mark, starts.FOLDER_TIERS.get(folder, "protocol")))
            continue
        found = starts.starts(path, function.__qualname__, tuple(getattr(item, "fixturenames", ())))
        for kind in sorted(found.kinds):
            item.add_marker(getattr(pytest.mark, kind))
        declared = {m for m in starts.TIERS if item.get_closest_marker(m)}
        if not declared:
            item.add_marker(getattr(pytest.mark, starts.tier(found, folder)))
        conflict = starts.unit_conflict(found, declared)
        if conflict:
            item.stash[_CONFLICT] = conflict
    for item in items:
        missing = side_by_side.reason_missing(item)
        if missing:
            item.stash[_CONFLICT] = missing
    if xdist_worker() is not None:
        # Serial tests first, then the longest (tests/durations*.json; an xdist_group by its total),
        # so that the last test to start is a short one. Every worker sorts alike (a stable sort of
        # the same collection).
        measured = side_by_side.measured_seconds()
        groups = side_by_side.group_seconds(items, measured)
        items.sort(key=lambda item: side_by_side.order(item, measured, groups))


_LOCK = pytest.StashKey[side_by_side.SessionLock]()


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """`make test`'s scheduler: --dist loadgroup's, with at most as many CPU-heavy tests at once as
    the machine has cores (tests/side_by_side.py)."""
    if config.getvalue("dist") == "loadgroup":
        return side_by_side.make_scheduler(config, log)
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Side by side, a serial test runs alone and the others share (tests/side_by_side.py). With
    TFMESOS_TEST_CPU set, each test's CPU seconds (its processes' too) are appended to that file,
    for tools/test_durations.py --cpu."""
    with side_by_side.cpu_recorded(item.nodeid):
        if xdist_worker() is None:
            yield
            return
        config = item.config
        if _LOCK not in config.stash:
            # The workers' basetemps (--basetemp, set by xdist) are folders of one session's folder.
            config.stash[_LOCK] = side_by_side.SessionLock(Path(config.option.basetemp).parent)
        lock = config.stash[_LOCK]
        with lock.alone() if item.get_closest_marker(side_by_side.SERIAL) else lock.beside():
            yield


def pytest_runtest_setup(item):
    conflict = item.stash.get(_CONFLICT, None)
    if conflict:
        pytest.fail(conflict, pytrace=False)


class _UnitGuard:
    """Records a socket bound or connected, or a process started, by the thread running a unit test."""

    thread: int | None = None
    seen: list[str] = []

    @classmethod
    def wrap(cls, owner: object, name: str, what: str) -> None:
        original = getattr(owner, name)

        def guarded(*args, **kwargs):
            if cls.thread is not None and threading.get_ident() == cls.thread:
                cls.seen.append(what)
            return original(*args, **kwargs)

        setattr(owner, name, guarded)


_UnitGuard.wrap(socket.socket, "bind", "a socket bound")
_UnitGuard.wrap(socket.socket, "connect", "a socket connected")
_UnitGuard.wrap(tcp, "connect", "a socket connected")  # the executor's drivers: _socket, not socket
_UnitGuard.wrap(subprocess.Popen, "_execute_child", "a process started")
_UnitGuard.wrap(os, "posix_spawn", "a process started")  # the executor's usual task (SpawnedTask)
_UnitGuard.wrap(os, "fork", "a process forked")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    if not item.get_closest_marker("unit"):
        yield
        return
    _UnitGuard.thread, _UnitGuard.seen = threading.get_ident(), []
    try:
        outcome = yield
    finally:
        _UnitGuard.thread = None
    if _UnitGuard.seen and outcome.exception is None:
        outcome.force_exception(pytest.fail.Exception(
            f"marked unit but {', '.join(sorted(set(_UnitGuard.seen)))} while it ran: unit means no process and "
            "no socket; name what starts it in tests/starts.py (CALLS) or the module's STARTS", pytrace=False))


@pytest.fixture(scope="session")
def zk(tmp_path_factory):
    """A real ZooKeeper (Debian's package) on 127.0.0.1, shared by the tests that need one."""
    if not zookeeper.available():
        pytest.fail("ZooKeeper is not installed: `make test` installs Debian's zookeeper package "
                    "(tools/ensure_test_deps.sh); deselect these tests on purpose with -m 'not zookeeper'")
    server = zookeeper.ZooKeeper(tmp_path_factory.mktemp("zk")).start()
    yield server
    server.stop()
