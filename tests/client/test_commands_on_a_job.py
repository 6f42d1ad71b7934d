"""`tfmesos logs/restart/kill/status` against a running job and after it, as a user types them:
a task that is not one is named with the tasks there are (exit 2), a scheduler that is gone is
one line (exit 3), and `status NAME --json` has the live status' shape once the job has ended."""
from __future__ import annotations

import json
import os
import re
import subprocess
import time

from tests.e2e.harness import TFMESOS, run_scheduler, wait_gone, write_options


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(TFMESOS + list(args), capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def test_commands_name_the_tasks_there_are_and_a_gone_scheduler_plainly(tmp_path):
    state = str(tmp_path / "state")
    options = write_options(tmp_path / "o.json", service={"name": "cmds"}, job={"command": "sleep 60"},
                            roles={"chief": {"count": 1, "cpus": 0.1, "mem": 64},
                                   "worker": {"count": 1, "cpus": 0.1, "mem": 64}})
    run = run_scheduler(options, "--api-port", "0", "--state-dir", state)
    try:
        api = run.wait_for(r"scheduler API on http://([\d.]+:\d+)/", 60).group(1)
        run.wait_for(r"worker:0 TASK_RUNNING", 60)
        run.wait_for(r"chief:0 TASK_RUNNING", 60)

        # restart and kill find the job's token beside the API's live marker in the run's state directory.
        for command in (["logs", "nope:0"], ["restart", "nope:0", "--state-dir", state], ["logs", "worker:7"]):
            out = _cli(*command, "--api", api)
            assert out.returncode == 2, (command, out.returncode, out.stderr)
            assert "no such task in this job: expected one of chief:0, worker:0" in out.stderr, out.stderr
            assert "--follow waits" not in out.stderr
        out = _cli("logs", "worker:\u00b2", "--api", api)  # a digit to str.isdigit, not to int()
        assert out.returncode == 2 and "expected ROLE:INDEX" in out.stderr, out.stderr
        out = _cli("logs", "worker:0", "--tail", "0", "--api", api)
        assert out.returncode == 2 and "--tail: '0' is invalid: expected a whole number of lines >= 1" in out.stderr

        assert _cli("kill", "--api", api, "--state-dir", state).returncode == 0
        assert run.wait(60) == 5, run.output[-3000:]
        for command in (["kill"], ["restart", "worker:0"], ["logs", "worker:0"]):
            out = _cli(*command, "--api", api)
            assert out.returncode == 3, (command, out.returncode, out.stderr)
            assert re.fullmatch(rf"tfmesos \w+: cannot reach the scheduler API at {re.escape(api)}: connection refused; "
                                r"check --api or TFMESOS_API, and that the job runs\n", out.stderr), out.stderr

        # The ended job's kept status has the live status' shape.
        out = _cli("status", "cmds", "--json", "--state-dir", state)
        assert out.returncode == 0, out.stderr
        snap = json.loads(out.stdout)
        assert snap["name"] == "cmds" and snap["phase"] == "KILLED" and "version" in snap and snap["ended_at"]
        assert sorted(snap["end"]["logs"]) == ["chief:0", "worker:0"], "and where the logs are, from the record"
        assert sorted((t["role"], t["index"]) for t in snap["tasks"]) == [("chief", 0), ("worker", 0)]

        # A TFMESOS_API left from that job: a NAME with no record is said at once, not after --connect-timeout.
        started = time.monotonic()
        out = _cli("status", "nosuch", "--state-dir", state, "--connect-timeout", "60", env={"TFMESOS_API": api})
        assert out.returncode == 2 and "job 'nosuch': no record of it in" in out.stderr, out.stderr
        assert time.monotonic() - started < 30, "it waited for the gone scheduler"
    finally:
        run.killpg()
    assert not wait_gone("cmds", timeout=5)
