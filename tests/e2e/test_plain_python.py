"""A task's plain `python` on the embedded master is the interpreter tfmesos runs on, even when the
caller's PATH has no venv; a task that cannot find its program or module says what to check."""
from __future__ import annotations

import json
import os

import pytest

from tests.e2e.harness import run_scheduler

pytestmark = pytest.mark.e2e

BARE_ENV = {"HOME": os.environ.get("HOME", "/root"), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}


def _options(tmp_path, name: str, command: str):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"service": {"name": name}, "job": {"command": command},
                                "roles": {"chief": {"count": 1, "cpus": 0.2, "mem": 128}}}))
    return path


def test_plain_python_in_a_command_is_tfmesos_own_interpreter(tmp_path):
    import sys

    options = _options(tmp_path, "plain-python", "python -c 'import sys, tfmesos; print(\"interpreter\", sys.executable)'")
    run = run_scheduler(options, "--state-dir", str(tmp_path / "state"), env=BARE_ENV)
    assert run.wait(120) == 0, run.output
    assert f"chief:0 | interpreter {sys.executable}" in run.output


def test_a_missing_module_is_hinted_at_with_tfmesos_python(tmp_path):
    options = _options(tmp_path, "plain-python-missing", "python -c 'import no_such_module_for_tfmesos'")
    run = run_scheduler(options, "--state-dir", str(tmp_path / "state"), env=BARE_ENV)
    assert run.wait(120) == 1, run.output
    assert "No module named 'no_such_module_for_tfmesos'" in run.output
    hint = next(line for line in run.output.splitlines() if "hint:" in line)
    assert "$TFMESOS_PYTHON" in hint and "job.python" in hint


def test_a_task_whose_executor_never_started_shows_the_executors_stderr(tmp_path):
    path = tmp_path / "nopy.json"
    path.write_text(json.dumps({"service": {"name": "no-python"},
                                "job": {"command": "true", "python": "/nonexistent/python3"},
                                "roles": {"chief": {"count": 1, "cpus": 0.2, "mem": 128}}}))
    run = run_scheduler(path, "--state-dir", str(tmp_path / "state"))
    assert run.wait(120) == 1, run.output
    lines = run.output.splitlines()
    at = next(i for i, line in enumerate(lines) if "last lines of chief:0" in line and "sandbox stderr" in line)
    assert "/nonexistent/python3" in lines[at + 1] and "not found" in lines[at + 1], lines[at:]
    assert any("hint:" in line and "job.python" in line for line in lines[at:])
