"""A password given in a URL (--master, --zk, --marathon, a ZooKeeper host list) is never echoed back:
errors and status lines quote the URL with ``***`` in its place."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tfmesos.errors import redact_url

TFMESOS = [sys.executable, "-m", "tfmesos.client.cli"]


@pytest.mark.parametrize("given, shown", [
    ("zk://alice:s3cret@zk1:2181,zk2:2181/mesos", "zk://alice:***@zk1:2181,zk2:2181/mesos"),
    ("http://admin:mPass@127.0.0.1:9", "http://admin:***@127.0.0.1:9"),
    ("alice:s3cretZK@zk1:2181", "alice:***@zk1:2181"),
    ("zk://zk1:2181/mesos", "zk://zk1:2181/mesos"),
    ("127.0.0.1:5050", "127.0.0.1:5050"),
])
def test_a_password_in_a_url_is_replaced(given: str, shown: str) -> None:
    assert redact_url(given) == shown


@pytest.mark.parametrize("args", [
    ["run", "OPTIONS", "--master", "zk://alice:s3cretZK@zk1:2181/mesos"],
    ["run", "OPTIONS", "--master", "https://alice:s3cretZK@master:5050"],
    ["run", "OPTIONS", "--zk", "zk://alice:s3cretZK@bad host/tfmesos"],
    ["deploy", "OPTIONS", "--marathon", "http://alice:s3cretZK@127.0.0.1:1"],
])
def test_commands_refusing_or_failing_on_a_url_do_not_echo_its_password(tmp_path, args: list[str]) -> None:
    options = tmp_path / "o.json"
    options.write_text('{"service": {"name": "redact"}, "job": {"command": "true"}, "roles": {"chief": {"count": 1}}}')
    out = subprocess.run(TFMESOS + [str(options) if a == "OPTIONS" else a for a in args], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode != 0, out.stdout
    assert "s3cretZK" not in out.stdout + out.stderr, out.stderr
    assert "alice:***@" in out.stderr, out.stderr
