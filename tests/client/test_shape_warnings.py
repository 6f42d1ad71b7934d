"""A job shape TensorFlow can run but that is often a slip (core/tensorflow/profile.warnings) is said
before anything starts, where each way in says things: `tfmesos run` (and --dry-run) on stderr,
`tfmesos.cluster()` as a Python warning. The job still runs."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import tfmesos

ROOT = Path(__file__).resolve().parents[2]
SLIP = "every worker runs it as a second coordinator"


def _dry_run(tmp_path: Path, roles: dict) -> subprocess.CompletedProcess:
    path = tmp_path / "job.json"
    path.write_text(json.dumps({"service": {"name": "shape"}, "job": {"command": "python train.py"}, "roles": roles}))
    return subprocess.run([sys.executable, "-m", "tfmesos.client.cli", "run", str(path), "--dry-run"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
                               "PYTHONPATH": str(ROOT)})


def test_a_dry_run_warns_of_workers_running_the_coordinator_script_and_still_prints_the_plan(tmp_path):
    run = _dry_run(tmp_path, {"ps": {"count": 1}, "chief": {"count": 1}, "worker": {"count": 2}})
    assert run.returncode == 0, run.stderr
    (line,) = [line for line in run.stderr.splitlines() if SLIP in line]
    assert line.startswith("tfmesos: warning: $.roles.worker: the workers run $.job.command 'python train.py'")
    assert "worker:1" in run.stdout, "the plan is printed all the same"


def test_the_tutorials_shape_is_not_warned_about(tmp_path):
    run = _dry_run(tmp_path, {"ps": {"count": 1}, "chief": {"count": 1}, "worker": {"count": 2, "server": True}})
    assert run.returncode == 0 and "warning" not in run.stderr, run.stderr


def test_cluster_warns_where_its_chief_and_workers_run_the_jobs_command():
    """Nothing starts before the with block: the warning comes when cluster() is called."""
    with pytest.warns(UserWarning, match=f"tfmesos.cluster\\(\\): \\$.roles.worker: .*{SLIP}"):
        tfmesos.cluster({"ps": 1, "chief": {"count": 1, "server": False}, "worker": {"count": 2, "server": False}},
                        coordinator=False, options={"job": {"command": "python train.py"}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # its usual shape: this process coordinates, the workers serve
        tfmesos.cluster({"ps": 1, "worker": 2})
