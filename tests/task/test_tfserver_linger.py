"""tfmesos' built-in server (python -m tfmesos.task.tfserver) after a planned-stop notice: a
SIGTERM makes it serve on, for the chief to save, until a second SIGTERM or just before the
notice's deadline; the second SIGTERM case runs in tests/e2e/test_planned_stops.py."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.e2e.harness import LineProcess, free_ports
from tfmesos.task import notice, tfserver


def test_a_server_told_of_a_planned_stop_serves_until_just_before_the_deadline(tmp_path: Path) -> None:
    path = str(tmp_path / "notice.json")
    env = {**os.environ, "TMPDIR": str(tmp_path), **notice.task_env(path, {}),
           "TF_CONFIG": json.dumps({"cluster": {"ps": [f"127.0.0.1:{free_ports(1)[0]}"]},
                                    "task": {"type": "ps", "index": 0}})}
    server = LineProcess([sys.executable, "-m", "tfmesos.task.tfserver"], env=env)
    try:
        server.wait_for("serving on", timeout=120)
        deadline = time.time() + 4.0
        notice.write(path, notice.Notice("agent 127.0.0.1 draining", "drain", deadline))
        os.killpg(server.proc.pid, signal.SIGTERM)
        server.wait_for(r"ps:0: planned stop \(agent 127.0.0.1 draining\): serving until a second SIGTERM or \d s",
                        timeout=30)
        assert server.wait(30) == 0
        left = deadline - time.time()
        assert 0 < left <= tfserver.LINGER_MARGIN_S + 0.5, left  # it served on, and left before SIGKILL
    finally:
        server.killpg()
        server.proc.wait()
