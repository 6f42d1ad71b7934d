"""Fixtures shared across the suite, and the markers that pick parts of it.

Every test gets one marker from its folder: ``unit`` (pure logic, no process), ``protocol``
(the embedded master against the recorded Mesos traces and real pymesos drivers), ``e2e`` (whole
jobs with real TensorFlow processes) or ``chaos``; ``zookeeper`` marks the tests that need a
real ZooKeeper. Nothing is skipped unless asked for with ``-m``: a missing ZooKeeper fails.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests import zookeeper

_TESTS = Path(__file__).resolve().parent
_FOLDER_MARKERS = {"core": "unit", "localmaster": "protocol", "e2e": "e2e", "chaos": "chaos", "package": "unit"}


def pytest_configure(config):
    # A home of the suite's own: `tfmesos run --master` keeps state under ~/.tfmesos by default,
    # and a record left by one test (or by the user's own jobs) must not meet another.
    config._tfmesos_home = tempfile.mkdtemp(prefix="tfmesos-test-home-")
    config._tfmesos_real_home = os.environ.get("HOME")
    os.environ["HOME"] = config._tfmesos_home


def pytest_unconfigure(config):
    if getattr(config, "_tfmesos_real_home", None) is not None:
        os.environ["HOME"] = config._tfmesos_real_home
    shutil.rmtree(getattr(config, "_tfmesos_home", ""), ignore_errors=True)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        rel = Path(str(item.fspath)).resolve().relative_to(_TESTS)
        folder = rel.parts[0] if len(rel.parts) > 1 else ""
        if not any(item.get_closest_marker(m) for m in ("unit", "protocol", "e2e", "chaos")):
            item.add_marker(getattr(pytest.mark, _FOLDER_MARKERS.get(folder, "unit")))
        if "zk" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.zookeeper)


@pytest.fixture(scope="session")
def zk(tmp_path_factory):
    """A real ZooKeeper (Debian's package) on 127.0.0.1, shared by the tests that need one."""
    if not zookeeper.available():
        pytest.fail("ZooKeeper is not installed: `make test` installs Debian's zookeeper package "
                    "(tools/ensure_test_deps.sh); deselect these tests on purpose with -m 'not zookeeper'")
    server = zookeeper.ZooKeeper(tmp_path_factory.mktemp("zk")).start()
    yield server
    server.stop()
