"""A task's end is reported as soon as it is known (issue 39, item 7): the forwarded output's last
lines go at once, not a batch window later, and a process the task left behind, holding its output
pipes, does not hold its end back (it is killed before the executor exits: test_nothing_left.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tfmesos.executor import executor


def test_the_last_forwarded_lines_go_at_the_task_s_end_without_waiting_for_the_batch_window(monkeypatch) -> None:
    monkeypatch.setattr(executor, "OUTPUT_BATCH_SECONDS", 60.0)  # a window no end should wait for
    sent: list = []
    forwarder = executor.OutputForwarder(sent.append, "T1")
    forwarder("stdout", "final test accuracy: 0.97")
    forwarder.close()
    assert [m.lines for m in sent] == [["final test accuracy: 0.97"]]
    forwarder("stdout", "a line of what the task left behind")  # after its end: not the task's
    assert len(sent) == 1


# The task ends at once, leaving a child that holds its output pipes for 8 s; its output is pumped
# (forwarded), as the chief's is. The probe says whether that child still ran when wait() returned.
_PROBE = r"""
import json, os
from tfmesos.executor.executor import TaskProcess
p = TaskProcess(["/bin/sh", "-c", "sleep 8 & echo $! > child.pid; echo last line; exit 0"], dict(os.environ),
                os.getcwd(), lambda stream, line: None)
code = p.wait()
child = int(open("child.pid").read())
alive = os.path.exists(f"/proc/{child}") and open(f"/proc/{child}/stat").read().split()[2] != "Z"
os.kill(child, 9)
os.write(int(os.environ["REPORT_FD"]), json.dumps({"code": code, "tail": p.log_tail(), "child_alive": alive}).encode())
"""


def test_a_child_the_task_left_holding_its_output_does_not_hold_back_its_end(tmp_path: Path) -> None:
    read, write = os.pipe()
    env = {"PYTHONPATH": str(Path(__file__).parents[2]), "PATH": "/usr/bin:/bin", "REPORT_FD": str(write)}
    proc = subprocess.Popen([sys.executable, "-c", _PROBE], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            pass_fds=(write,), cwd=tmp_path, env=env)
    os.close(write)
    out, err = proc.communicate(timeout=60)
    with open(read, "rb") as f:
        found = json.loads(f.read() or b"{}")
    assert proc.returncode == 0, err
    assert found["code"] == 0 and "last line" in found["tail"], found
    assert found["child_alive"], "the end was known while the child still held the pipes (it waited for their end)"
