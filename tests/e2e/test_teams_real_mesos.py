"""The multi-team scenarios of test_teams.py against a real Apache Mesos master and agents.

Not part of `make test` (building Mesos takes an hour): collected only when TFMESOS_REAL_MESOS
names a folder with the real-mesos scripts (build.sh done, start-master.sh, start-agent.sh,
stop.sh), as `make test-real-mesos MESOS_TOOLS=<that folder>` does.

The same jobs, options and assertions as against the embedded master (which must behave like
this): reservations per role, Basic-auth principals and ACLs, a refused principal, a scheduler
killed and restarted, quota holding a job back, one live job per name, the main example in a role.
GPUs are left out (the real agents here have none). Passed against Mesos 1.12 (commit c1b42f79 with
the scripts' patches) on 2026-11-24; the one difference found, the credentials file's format, was
fixed in the embedded master.
"""
from __future__ import annotations

import json
import os
import pwd
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from .harness import eventually
from .test_teams import (ACLS, SECRETS, run_main_example_in_role, run_quota_and_one_job_per_name, run_two_roles_job,
                         run_two_teams)

TOOLS = Path(os.environ.get("TFMESOS_REAL_MESOS", "")).resolve()
# Where build.sh put Mesos: the user's own home (the suite runs with a HOME of its own).
MESOS_HOME = os.environ.get("MESOS_HOME") or str(Path(pwd.getpwuid(os.getuid()).pw_dir) / "mesos")
pytestmark = pytest.mark.slow
MASTER = "127.0.0.1:5050"


class RealMesos:
    """mesos-master and one mesos-agent per resources string (ports 5051, 5052, ...), started in
    order so that agent i registers as S<i>, like the embedded master's agents."""

    def __init__(self, agents: list[str], master_flags: list[str] = ()) -> None:
        self.address = MASTER
        self._script("stop.sh")
        self._script("start-master.sh", *master_flags)
        for index, resources in enumerate(agents):
            self._script("start-agent.sh", resources, env={"AGENT_PORT": str(5051 + index)})
            eventually(lambda: len(self.state()["slaves"]) == index + 1, 60, f"agent {index} to register")

    def _script(self, name: str, *args: str, env: dict[str, str] | None = None) -> None:
        done = subprocess.run(["bash", str(TOOLS / name), *args],
                              env={**os.environ, "MESOS_HOME": MESOS_HOME, **(env or {})},
                              capture_output=True, text=True, timeout=180)
        assert done.returncode == 0 or name == "stop.sh", f"{name}: {done.stdout}{done.stderr}"

    def state(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"http://{self.address}/state", timeout=10) as resp:
            return json.load(resp)

    def operator(self, call: dict[str, Any]) -> None:
        request = urllib.request.Request(f"http://{self.address}/api/v1", data=json.dumps(call).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as resp:
            assert resp.status == 200, resp.status

    def stop(self) -> None:
        self._script("stop.sh")


def test_two_teams_side_by_side_on_real_mesos(tmp_path):
    credentials = tmp_path / "credentials"
    credentials.write_text(json.dumps({"credentials": [{"principal": p, "secret": s} for p, s in SECRETS.items()]}))
    master = RealMesos(
        ["cpus(team-a):1;mem(team-a):1024;cpus:0.5;mem:512;disk:1000;ports:[31000-31999]",
         "cpus(team-b):1;mem(team-b):1024;disk:1000;ports:[32000-32999]"],
        ["--authenticate_http_frameworks", "--http_framework_authenticators=basic",
         f"--credentials=file://{credentials}", f"--acls={json.dumps(ACLS)}"])
    try:
        run_two_teams(tmp_path, master, gpu_job=False, gone_within=30)
    finally:
        master.stop()


def test_quota_holds_a_job_back_and_one_live_job_per_name_on_real_mesos(tmp_path):
    master = RealMesos(["cpus:2;mem:2048;disk:1000;ports:[31000-31999]"])
    try:
        master.operator({"type": "UPDATE_QUOTA", "update_quota": {"force": True, "quota_configs": [
            {"role": "team-a", "guarantees": {}, "limits": {"cpus": {"value": 1.2}}}]}})
        run_quota_and_one_job_per_name(tmp_path, master)
    finally:
        master.stop()


def test_main_example_in_a_role_on_an_agent_wholly_reserved_to_it_on_real_mesos(tmp_path):
    master = RealMesos(["cpus(ml-team):4;mem(ml-team):8192;disk(ml-team):20000;ports(ml-team):[31000-31999]"])
    try:
        run_main_example_in_role(tmp_path, master)
    finally:
        master.stop()


def test_a_job_in_two_roles_uses_the_reservations_of_both_on_real_mesos(tmp_path):
    master = RealMesos(["cpus(team-a):1;mem(team-a):1024;disk:1000;ports(team-a):[31000-31999]",
                        "cpus(team-b):1;mem(team-b):1024;disk:1000;ports(team-b):[32000-32999]"])
    try:
        run_two_roles_job(tmp_path, master)
    finally:
        master.stop()
