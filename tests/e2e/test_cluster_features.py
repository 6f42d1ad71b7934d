"""Shared-cluster features end to end: GPUs, roles, principals and secrets on the embedded master."""
from __future__ import annotations

import json

import os
import re

import pytest

from tests.e2e.harness import LocalMaster, run_scheduler, wait_gone, write_options


def test_gpu_tasks_get_their_gpus_and_cpu_tasks_none(tmp_path):
    opts = write_options(
        tmp_path / "o.json",
        service={"name": "gpus"},
        job={"command": 'echo "$TFMESOS_JOB_NAME sees CUDA_VISIBLE_DEVICES=[$CUDA_VISIBLE_DEVICES]"'},
        roles={"chief": {"count": 1, "gpus": 2}},
    )
    run = run_scheduler(opts, "--agents", "2", "--gpus-per-agent", "2")
    assert run.wait(120) == 0, run.output
    m = re.search(r"chief sees CUDA_VISIBLE_DEVICES=\[([0-9,]*)\]", run.output)
    # Both of one agent's GPUs: agent 0 hands out devices 0-1, agent 1 devices 2-3 (one host).
    assert m and sorted(m.group(1).split(",")) in (["0", "1"], ["2", "3"]), run.output


def test_gpu_job_does_not_fit_cpu_only_agents_and_says_so(tmp_path):
    master = LocalMaster(tmp_path / "m", agents=1)
    try:
        opts = write_options(
            tmp_path / "o.json",
            service={"name": "gpu-none"},
            job={"command": "true"},
            roles={"worker": {"count": 1, "gpus": 1}},
            policies={"placement_timeout_seconds": 120},
        )
        run = run_scheduler(opts, "--master", master.address)
        assert run.wait(60) == 1, run.output  # at once, not at the placement timeout (issue 31)
        assert ("the job can never fit this cluster: worker ask(s) for gpus, and none of its 1 agent(s) "
                "has any gpus") in run.output, run.output
    finally:
        master.stop()


@pytest.fixture
def secured_master(tmp_path):
    creds = tmp_path / "credentials"
    creds.write_text(json.dumps({"credentials": [{"principal": "team-a", "secret": "s3cret-value-a"}]}))
    master = LocalMaster(tmp_path / "m", agents=1, extra=["--credentials", str(creds)])
    yield master
    master.stop()


def test_principal_and_secret_authenticate_and_the_secret_never_shows(tmp_path, secured_master):
    opts = write_options(
        tmp_path / "o.json",
        service={"name": "secured", "principal": "team-a", "role": "team-a"},
        job={"command": "echo role=$MESOS_ALLOCATION_ROLE; true"},
        roles={"chief": {"count": 1}},
    )
    env = dict(os.environ, MESOS_SECRET="s3cret-value-a")
    run = run_scheduler(opts, "--master", secured_master.address, "-v", env=env)
    assert run.wait(120) == 0, run.output
    assert "job secured SUCCEEDED" in run.output
    assert "s3cret-value-a" not in run.output, "the secret must never be printed, not even in debug logs"
    state = secured_master.state()
    frameworks = state.get("frameworks", []) + state.get("completed_frameworks", [])
    fw = next(f for f in frameworks if f["name"] == "secured")
    assert fw.get("principal") == "team-a" and "team-a" in (fw.get("roles") or [fw.get("role")])
    assert not wait_gone("secured", timeout=5)


def test_wrong_secret_is_refused_clearly(tmp_path, secured_master):
    opts = write_options(
        tmp_path / "o.json",
        service={"name": "intruder", "principal": "team-a"},
        job={"command": "true"},
        roles={"chief": {"count": 1}},
        policies={"placement_timeout_seconds": 5},
    )
    env = dict(os.environ, MESOS_SECRET="wrong-secret-xyz")
    run = run_scheduler(opts, "--master", secured_master.address, env=env)
    code = run.wait(60)
    assert code != 0
    assert "401" in run.output or "Unauthorized" in run.output, run.output
    assert "wrong-secret-xyz" not in run.output
    assert "launch" not in run.output
