"""``tfmesos update`` survives the scheduler: the record keeps the update's options (format 6), and a
scheduler started again with the options the job was first started with (a Marathon restart, a
failover) resumes it with the update's: the workers the update added, no task launched twice. The
tasks are plain ``sleep`` processes, stopped by the update's planned stop (SIGTERM: exit 143, a
planned end) and relaunched; TensorFlow is the 2-to-4 case's (test_update.py).

An update that changed an env value too: the record keeps env names only, and the values the
update set are kept apart, readable by the job's user only (store/state_store.py), so that the
resumed job relaunches its tasks with the update's values, not the first options' ones."""
from __future__ import annotations

import json
import os
import re
import signal
import urllib.request

from tests.e2e.harness import (TFMESOS, LineProcess, LocalMaster, eventually, find_task_process, run_scheduler,
                               write_options)


def _opts(tmp_path, workers: int, lr: str = "0.0417", max_restarts: int = 0):
    return write_options(tmp_path / f"o{workers}-{lr}.json", service={"name": "update-failover"},
                         job={"command": "sleep 600", "env": [f"LR={lr}"]},
                         roles={"worker": {"count": workers, "cpus": 0.2, "mem": 128, "max_restarts": max_restarts,
                                           **({"restart_policy": "OnFailure"} if max_restarts else {})}},
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
        _stop(master, first, second)


def _stop(master: LocalMaster, *runs) -> None:
    """The schedulers still running (SIGTERM, then their process groups), then the master."""
    for run in runs:
        if run is not None and run.proc.poll() is None:
            run.kill(signal.SIGTERM)
            run.wait(60)
        if run is not None:
            run.killpg()
    master.stop()


def _lr_of(role: str, index: int) -> tuple[int | None, str | None]:
    """The pid and LR of the task's running process (None, None while there is none)."""
    proc = find_task_process("update-failover", role, index)
    return (None, None) if proc is None else (proc.pid, proc.environ().get("LR"))


def test_an_update_of_an_env_value_is_kept_through_a_failover(tmp_path):
    master = LocalMaster(tmp_path / "m")
    args = ["--master", master.address, "--state-dir", str(tmp_path / "state")]
    first = run_scheduler(_opts(tmp_path, 2, max_restarts=1), *args)
    second = None
    try:
        eventually(lambda: _running(master.state(), 2), 120, "2 workers running\n" + first.output[-2000:])
        update = LineProcess(TFMESOS + ["update", "update-failover", str(_opts(tmp_path, 2, "0.0733", max_restarts=1)),
                                        "--state-dir", str(tmp_path / "state")], env=dict(os.environ))
        assert update.wait(60) == 0, update.output
        assert re.search(r"\$\.job\.env: \d+ variables? -> LR changed", update.output) and "0.0733" not in update.output, update.output
        eventually(lambda: _lr_of("worker", 0)[1] == "0.0733" and _lr_of("worker", 1)[1] == "0.0733", 120,
                   "both workers relaunched with LR=0.0733\n" + first.output[-2000:])
        first.kill(signal.SIGKILL)
        first.wait(30)
        kept = [p for p in (tmp_path / "state").rglob("*") if p.is_file() and b"0.0733" in p.read_bytes()]
        assert kept and all(p.stat().st_mode & 0o077 == 0 for p in kept), f"the update's values readable by others: {kept}"
        second = run_scheduler(_opts(tmp_path, 2, max_restarts=1), *args)  # the first options: LR=0.0417
        second.wait_for(r"resuming it with the update's options", 60)
        second.wait_for(r"resuming job 'update-failover' as framework", 60)
        eventually(lambda: _running(master.state(), 2), 60, "the 2 workers adopted\n" + second.output[-2000:])
        adopted, _ = _lr_of("worker", 1)
        find_task_process("update-failover", "worker", 1).kill()  # a failure: relaunched by the resumed job
        second.wait_for(r"launch worker:1 as ", 120)
        pid, lr = eventually(lambda: (found := _lr_of("worker", 1))[0] not in (None, adopted) and found, 120,
                              "worker:1 relaunched\n" + second.output[-2000:])
        assert lr == "0.0733", f"worker:1 (pid {pid}) relaunched with LR={lr}: the first options' value, not the update's"
        assert "0.0733" not in second.output, "an env value in the console"
    finally:
        _stop(master, first, second)


def _workers(api: str) -> int:
    with urllib.request.urlopen(api, timeout=10) as resp:
        return len([t for t in json.load(resp)["tasks"] if t["role"] == "worker"])
