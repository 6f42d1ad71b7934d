"""A streamed task's output survives a master failover and a scheduler restart (kill -9 of
either while the chief writes its last lines): the console shows every line once, the progress
reaches the last step, the kept record has both, and a reconciliation answer is shown once."""
from __future__ import annotations

import json
import re
import signal
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Callable

import pytest

from tests.e2e.harness import LocalMaster, find_task_process, killed_scheduler, run_scheduler, wait_gone, write_options
from tests.e2e.test_zk_failover import reap, restarted_master  # noqa: F401 (reap: a fixture)

HERE = Path(__file__).resolve().parent
LAST_LINES = ["after 1", "after 2", "after 3", "final test accuracy: 1.0"]


def gated_options(tmp_path: Path, service: str) -> Path:
    return write_options(tmp_path / "o.json", service={"name": service},
                         job={"command": "$TFMESOS_PYTHON gated_chief.py", "workdir": str(HERE),
                              "env": [f"GATE={tmp_path / 'gate'}"]},
                         roles={"chief": {"count": 1, "cpus": 0.1, "mem": 128}},
                         policies={"success": "chief"})


def chief_lines(output: str) -> list[str]:
    return re.findall(r"^  chief:0 \| (.*)$", output, re.M)


def open_gate_and_wait_for_the_chief(tmp_path: Path, service: str) -> None:
    chief = find_task_process(service, "chief", 0)
    assert chief is not None
    (tmp_path / "gate").touch()
    chief.wait(timeout=30)  # its last lines are written while nobody listens


def assert_every_line_once(output: str) -> None:
    lines = chief_lines(output)
    counts = Counter(lines)
    for line in ["before 1", "before 2", "before 3", *LAST_LINES]:
        assert counts[line] == 1, f"{line!r} shown {counts[line]} times:\n{output[-4000:]}"
    assert re.search(r"progress chief:0 \[#+\] step 10/10 \(100%\)", output), output[-3000:]
    lines = [re.sub(r"^\[tfmesos +[0-9.]+s\] ", "", line) for line in output.splitlines()]
    said = [line for line in lines if "REASON_RECONCILIATION" in line]
    assert len(said) == len(set(said)), "a reconciliation answer shown twice:\n" + "\n".join(said)
    twice = [line for line, after in zip(lines, lines[1:]) if "REASON_RECONCILIATION" in line and "repeated" in after]
    assert not twice, f"a reconciliation answer shown again (collapsed): {twice}"


def kept_record(state_dir: Path, service: str) -> dict:
    files = sorted((state_dir / "history" / service).glob("*.json"))
    assert files, f"no record under {state_dir}"
    return json.loads(files[-1].read_text())


def assert_the_end_shown(out: str, tmp_path: Path, service: str) -> None:
    """The job succeeded; its console shows every line once; its record has the end; nothing is left."""
    assert f"job {service} SUCCEEDED" in out
    assert_every_line_once(out)
    assert_record_has_the_end(kept_record(tmp_path / "state", service))
    assert not wait_gone(service)


def assert_record_has_the_end(record: dict) -> None:
    end = record["end"]
    assert end["progress"]["step"] == 10, end["progress"]
    tail = end["logs"]["chief:0"][-1]["tail"]["stdout"]
    assert all(line in tail for line in LAST_LINES), tail


def run_master_failover_output(tmp_path: Path, service: str, master: str, kill_master: Callable[[], None],
                               master_back: Callable[[], None]) -> None:
    """The master killed -9 while the chief writes its last lines (``kill_master``), then a master
    back (``master_back``: the same one restarted, or another that takes the lead)."""
    opts = gated_options(tmp_path, service)
    run = run_scheduler(opts, "--master", master, "--state-dir", str(tmp_path / "state"))
    try:
        api = run.wait_for(r"scheduler API on http://(\S+)/v1/status", 90).group(1)
        fid = run.wait_for(r"registered as framework (\S+)", 90).group(1)
        run.wait_for(r"chief:0 \| before 3", 90)
        run.wait_for(r"progress chief:0 .*step 1/10", 30)
        kill_master()
        open_gate_and_wait_for_the_chief(tmp_path, service)
        with urllib.request.urlopen(f"http://{api}/v1/health", timeout=10) as resp:  # the loop turns on
            assert json.load(resp) == {"healthy": True}, "a scheduler waiting for its master is not wedged"
        master_back()
        run.wait_for(rf"re-registered as framework {re.escape(fid)}", 90)
        assert run.wait(120) == 0, run.output[-4000:]
        out = run.output
    finally:
        run.killpg()
    assert len(re.findall(r"launch \S+ as (\S+)", out)) == 1, "nothing relaunched"
    assert_the_end_shown(out, tmp_path, service)


def test_master_killed_while_the_chief_writes_its_last_lines(tmp_path, reap):
    reap("out-master")
    masters = [LocalMaster(tmp_path / "master")]

    def kill() -> None:
        masters[0].kill(signal.SIGKILL)
        masters[0].wait(30)

    try:
        run_master_failover_output(tmp_path, "out-master", masters[0].address, kill,
                                   lambda: masters.append(restarted_master(masters[0])))
    finally:
        for m in masters[::-1]:
            m.stop()


def run_scheduler_killed_output(tmp_path: Path, master: str, service: str = "out-scheduler",
                                *extra: str) -> None:
    """kill -9 of the scheduler while the chief writes its last lines; a second one adopts the job
    (against any master: the embedded one here, a real Mesos in the _real_mesos module)."""
    opts = gated_options(tmp_path, service)
    args = ["--master", master, "--state-dir", str(tmp_path / "state"), *extra]
    second = None
    try:
        killed_scheduler(opts, args, r"chief:0 \| before 3", 90)
        open_gate_and_wait_for_the_chief(tmp_path, service)
        second = run_scheduler(opts, *args)
        assert second.wait(90) == 0, second.output[-4000:]
        out = second.output
    finally:
        if second is not None:
            second.killpg()
    assert f"resuming job '{service}'" in out
    assert re.findall(r"launch \S+ as (\S+)", out) == [], "the restarted scheduler adopted the chief"
    assert_the_end_shown(out, tmp_path, service)  # the new console shows the chief's output from its start, once


def test_scheduler_killed_while_the_chief_writes_its_last_lines(tmp_path, reap):
    reap("out-scheduler")
    master = LocalMaster(tmp_path / "master", agents=1)
    try:
        run_scheduler_killed_output(tmp_path, master.address)
    finally:
        master.stop()
