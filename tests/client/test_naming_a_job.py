"""One rule for naming a job in every command that acts on one (issue 32): NAME, or --api, or
TFMESOS_API, else the one live job; with two live jobs and no name, each command lists both and
exits 2. Shell completion offers the live jobs' names. Real schedulers, each with its embedded master."""
from __future__ import annotations

import os
import subprocess

from tests.e2e.harness import TFMESOS, run_scheduler, stop_scheduler, wait_gone, write_options


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k != "TFMESOS_API"}
    return subprocess.run(TFMESOS + list(args), capture_output=True, text=True, timeout=120, env={**base, **(env or {})})


def _start(tmp_path, name: str, state: str):
    options = write_options(tmp_path / f"{name}.json", service={"name": name},
                            job={"command": "echo hello from {job_name}; sleep 120"},
                            roles={"chief": {"count": 1, "cpus": 0.1, "mem": 64},
                                   "worker": {"count": 1, "cpus": 0.1, "mem": 64}})
    run = run_scheduler(options, "--api-port", "0", "--state-dir", state)
    run.wait_for(r"worker:0 TASK_RUNNING", 90)
    run.wait_for(r"chief:0 TASK_RUNNING", 90)
    return run


def _complete(line: str, tmp_path) -> list[str]:
    """What bash completion (register-python-argcomplete) offers for ``line``."""
    out = tmp_path / "completions"
    env = {"_ARGCOMPLETE": "1", "COMP_LINE": line, "COMP_POINT": str(len(line)),
           "_ARGCOMPLETE_STDOUT_FILENAME": str(out), "_ARGCOMPLETE_IFS": "\n"}
    done = _cli(env=env)
    assert done.returncode == 0, done.stderr
    return [c.strip() for c in out.read_text().split("\n")]


def test_every_command_takes_a_name_or_the_one_live_job_and_lists_several(tmp_path):
    state = str(tmp_path / "state")
    one = _start(tmp_path, "names-one", state)
    two = None
    try:
        # One live job: a bare command acts on it.
        out = _cli("status", "--state-dir", state)
        assert out.returncode == 0 and out.stdout.startswith("job names-one  phase RUNNING"), out.stderr
        out = _cli("logs", "chief:0", "--state-dir", state)
        assert out.returncode == 0 and "hello from chief" in out.stdout, out.stderr
        # By name, every command.
        out = _cli("status", "names-one", "--state-dir", state)
        assert out.returncode == 0 and out.stdout.startswith("job names-one"), out.stderr
        out = _cli("logs", "names-one", "worker:0", "--state-dir", state)
        assert out.returncode == 0 and "hello from worker" in out.stdout, out.stderr
        out = _cli("restart", "names-one", "worker:0", "--state-dir", state)
        assert out.returncode == 0 and "worker:0" in out.stdout, out.stderr
        assert "names-one" in _complete(f"tfmesos kill --state-dir {state} ", tmp_path)

        two = _start(tmp_path, "names-two", state)
        for command in (["status"], ["logs", "chief:0"], ["kill"], ["restart", "worker:0"]):
            out = _cli(*command, "--state-dir", state)
            assert out.returncode == 2, (command, out.returncode, out.stderr)
            assert "2 of yours are running" in out.stderr and "names-one" in out.stderr \
                and "names-two" in out.stderr, (command, out.stderr)
        assert {"names-one", "names-two"} <= set(_complete(f"tfmesos status --state-dir {state} ", tmp_path))
        assert "kill" in _complete("tfmesos ki", tmp_path)

        out = _cli("kill", "names-two", "--state-dir", state)
        assert out.returncode == 0, out.stderr
        assert two.wait(60) == 5, two.output[-2000:]
        out = _cli("kill", "--state-dir", state)  # the one left
        assert out.returncode == 0, out.stderr
        assert one.wait(60) == 5, one.output[-2000:]
        out = _cli("kill", "names-one", "--state-dir", state)
        assert out.returncode == 2 and "job 'names-one': not running" in out.stderr, out.stderr
    finally:
        for run in (one, two):
            if run is not None:
                stop_scheduler(run)
    assert not wait_gone("names-one", timeout=5) and not wait_gone("names-two", timeout=5)
