"""Fixtures shared across the suite."""
from __future__ import annotations

import pytest

from tests import zookeeper


@pytest.fixture(scope="session")
def zk(tmp_path_factory):
    """A real ZooKeeper (Debian's package) on 127.0.0.1, shared by the tests that need one."""
    if not zookeeper.available():
        pytest.skip("ZooKeeper is not installed (.ci/run installs Debian's zookeeper package)")
    server = zookeeper.ZooKeeper(tmp_path_factory.mktemp("zk")).start()
    yield server
    server.stop()
