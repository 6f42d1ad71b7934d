"""``tfmesos update`` survives the scheduler: the record keeps the update's options (format 6), and a
scheduler started again with the options the job was first started with (a Marathon restart, a
failover) resumes it with the update's: the workers the update added, no task launched twice. The
tasks are plain ``sleep`` processes, stopped by the update's planned stop (SIGTERM: exit 143, a
planned end) and relaunched; TensorFlow is the 2-to-4 case's (test_update.py)."""
from __future__ import annotations

import json
import os
import re
import signal
import urllib.request

from tests.e2e.harness import TFMESOS, LineProcess, LocalMaster, eventually, run_scheduler, write_options


def _opts(tmp_path, workers: int):
    return write_options(tmp_path / f"o{workers}.json", service={"name": "update-failover"},
                         job={"command": "sleep 600", "env": ["LR=0.1"]},
                         roles={"worker": {"count": workers, "cpus": 0.2, "mem": 128, "max_restarts": 0}},
                         policies={"success": "all_workers"})


def _running(state: dict, count: int) -> bool:
    tasks = [t for f in state["frameworks"] if f["name"] == "update-failover" for t in f["tasks"]]
    return len([t for t in tasks if t["state"] == "TASK_RUNNING"]) == count


def test_an_update_is_resumed_by_a_scheduler_started_with_the_first_options(tmp_path):
    master = LocalMaster(tmp_path / "m")
    args = ["--master", master.address, "--state-dir", str(tmp_path / "state")]
    first = run_scheduler(_opts(tmp_path, 2), *args)
    second = None
    try:
        eventually(lambda: _running(master.state(), 2), 120, "2 workers running\n" + first.output[-2000:])
        update = LineProcess(TFMESOS + ["update", "update-failover", str(_opts(tmp_path, 3)), "--state-dir",
                                        str(tmp_path / "state")], env=dict(os.environ))
        assert update.wait(60) == 0, update.output
        first.wait_for(r"launch worker:2 as ", 120)
        eventually(lambda: _running(master.state(), 3), 120, "3 workers running\n" + first.output[-2000:])
        first.kill(signal.SIGKILL)
        first.wait(30)
        second = run_scheduler(_opts(tmp_path, 2), *args)  # the options it was first started with
        second.wait_for(r"resuming it with the update's options", 60)
        second.wait_for(r"resuming job 'update-failover' as framework", 60)
        api = second.wait_for(r"scheduler API on (http://\S+)", 60).group(1)
        eventually(lambda: _workers(api) == 3, 60, "the resumed job to have 3 workers\n" + second.output[-2000:])
        assert not re.findall(r"launch \S+ as ", second.output), "it adopted the 3 running workers"
        assert _running(master.state(), 3)
    finally:
        for run in (first, second):
            if run is not None and run.proc.poll() is None:
                run.kill(signal.SIGTERM)
                run.wait(60)
            if run is not None:
                run.killpg()
        master.stop()


def _workers(api: str) -> int:
    with urllib.request.urlopen(api, timeout=10) as resp:
        return len([t for t in json.load(resp)["tasks"] if t["role"] == "worker"])
