"""A zk:// master whose ZooKeeper answers but holds no master: refused within the connect
timeout, naming the path (a real ZooKeeper)."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_zk_path_without_a_master_is_named_within_the_timeout(zk, tmp_path: Path):
    (tmp_path / "o.json").write_text('{"job": {"command": "true"}, "roles": {"worker": {"count": 1}}}')
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "tfmesos.client.cli", "run", str(tmp_path / "o.json"), "--master",
                           f"zk://{zk.hosts}/no-master-here", "--state-dir", str(tmp_path / "state"),
                           "--connect-timeout", "2"],
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 3, proc.stderr
    assert f"no Mesos master in ZooKeeper at {zk.hosts}/no-master-here" in proc.stderr
    assert "Traceback" not in proc.stderr and elapsed < 15
