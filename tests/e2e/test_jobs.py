"""Whole jobs on the embedded master, with real TensorFlow processes and real ports."""
from __future__ import annotations

import json
import re
import subprocess

from tests.e2e.harness import ROOT, TFMESOS, LocalMaster, run_scheduler, wait_gone, write_options

PSS = ROOT / "examples" / "pss_digits" / "options.json"


# The examples' runs to accuracy are elsewhere, each once: the main example's (SUCCEEDED with
# "chief:0 finished", the servers KILLED with exit 0 after the chief FINISHED, nothing left, each
# task id once) is test_scenarios.py's run_main_example, which test_teams.py runs in a role, here
# and on real Mesos; on the master `tfmesos run` starts itself it trains to accuracy in
# test_recovery.py's killed-executor case, and `make run` / CI's tools/try_pythons.sh run it as the
# quick start. The MultiWorkerMirrored example's is test_scenarios.py's mwms_example (README's
# recipe runs it on the master `tfmesos run` starts).


def test_permanent_exit_code_fails_fast_with_the_cause(tmp_path):
    opts = write_options(
        tmp_path / "o.json",
        service={"name": "fails"},
        job={"command": "echo boom-on-stderr >&2; exit 3"},
        roles={"worker": {"count": 1, "restart_policy": "ExitCode", "max_restarts": 5}},
    )
    run = run_scheduler(opts)
    assert run.wait(120) == 1, run.output
    out = run.output
    assert "job fails FAILED" in out and "exit code 3 is permanent (1-127) under ExitCode" in out
    assert "boom-on-stderr" in out, "the task's last log lines are shown"
    assert re.search(r"worker:0 +\S+ +TASK_FAILED +restarts 0 exit 3", out)
    assert "relaunch #" not in out
    assert not wait_gone("fails", timeout=5)


def test_retryable_exit_code_is_retried_up_to_the_limit(tmp_path):
    opts = write_options(
        tmp_path / "o.json",
        service={"name": "retries"},
        job={"command": "exit 137"},
        roles={"worker": {"count": 1, "restart_policy": "ExitCode", "max_restarts": 2}},
        policies={"backoff_seconds": 0.2},
    )
    run = run_scheduler(opts)
    assert run.wait(120) == 1, run.output
    out = run.output
    assert "relaunch #1" in out and "relaunch #2" in out and "relaunch #3" not in out
    assert "max_restarts 2" in out
    assert len(set(re.findall(r"launch worker:0 as (\S+)", out))) == 3, "a new Mesos task id for every attempt"
    assert not wait_gone("retries", timeout=5)


def test_job_too_large_for_the_cluster_fails_at_once_saying_why(tmp_path):
    opts = write_options(
        tmp_path / "o.json",
        service={"name": "too-big"},
        job={"command": "true"},
        roles={"worker": {"count": 3, "cpus": 3.5}},
        policies={"placement_timeout_seconds": 120},
    )
    # A master given by address: the scheduler reads its agents from /state and fails the job
    # long before the placement timeout (issue 31).
    master = LocalMaster(tmp_path / "m", agents=2)
    try:
        run = run_scheduler(opts, "--master", master.address)
        assert run.wait(60) == 1, run.output
    finally:
        master.stop()
    out = run.output
    assert ("the job can never fit this cluster: its 3 tasks need cpus 10.8 together, and all 2 agent(s) "
            "together have cpus 8") in out, out
    assert "launch" not in out, "nothing starts unless everything fits"


def test_bad_options_are_rejected_before_anything_starts(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"roles": {"worker": {"count": 1, "gpus": 1.5}, "trainer": {}}, "job": {"command": "x"}}))
    run = subprocess.run(TFMESOS + ["run", str(bad)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert "$.roles.worker.gpus: 1.5 is invalid: expected integer" in run.stderr
    assert "$.roles.trainer: unknown field" in run.stderr
    assert "embedded Mesos master" not in run.stdout


def test_impossible_resources_for_the_cluster_are_rejected_up_front(tmp_path):
    opts = write_options(tmp_path / "o.json", job={"command": "x"}, roles={"worker": {"count": 1, "gpus": 2}})
    run = subprocess.run(TFMESOS + ["run", str(opts)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert "$.roles.worker.gpus: 2" in run.stderr and "--gpus-per-agent" in run.stderr


def test_dry_run_prints_the_plan(tmp_path):
    run = subprocess.run(TFMESOS + ["run", "--dry-run", str(PSS)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0
    assert re.search(r"worker:1 +0\.4 +768 +0 +0  built-in TensorFlow server", run.stdout)
    assert "success when: chief:0 finished with exit 0" in run.stdout
