"""The multi-team scenarios of test_teams.py against a real Apache Mesos master and agents.

Not part of `make test`: collected only when TFMESOS_REAL_MESOS names the folder of the real-mesos
scripts, as `make test-real-mesos` does (see real_mesos.py).

The same jobs, options and assertions as against the embedded master (which must behave like
this): reservations per role, Basic-auth principals and ACLs, a refused principal, a scheduler
killed and restarted, quota holding a job back, one live job per name, the main example in a role.
GPUs are left out (the real agents here have none). The one difference found, the credentials
file's format, was fixed in the embedded master.
"""
from __future__ import annotations

import json

import pytest

from tests.e2e.real_mesos import RealMesos
from tests.e2e.test_teams import (
    ACLS,
    SECRETS,
    run_main_example_in_role,
    run_quota_and_one_job_per_name,
    run_two_roles_job,
    run_two_teams,
)

pytestmark = pytest.mark.slow


def two_teams_master(tmp_path, team_a_agent: str) -> RealMesos:
    """A real master that authenticates the teams' principals (SECRETS, ACLS), an agent for team A
    (``team_a_agent``: its resources) and one reserved to team B."""
    credentials = tmp_path / "credentials"
    credentials.write_text(json.dumps({"credentials": [{"principal": p, "secret": s} for p, s in SECRETS.items()]}))
    return RealMesos(
        tmp_path / "mesos", [team_a_agent, "cpus(team-b):1;mem(team-b):1024;disk:1000;ports:[32000-32999]"],
        ["--authenticate_http_frameworks", "--http_framework_authenticators=basic",
         f"--credentials=file://{credentials}", f"--acls={json.dumps(ACLS)}"])


def test_two_teams_side_by_side_on_real_mesos(tmp_path):
    master = two_teams_master(tmp_path, "cpus(team-a):1;mem(team-a):1024;cpus:0.5;mem:512;disk:1000;ports:[31000-31999]")
    try:
        run_two_teams(tmp_path, master, gpu_job=False, gone_within=30)
    finally:
        master.stop()


def test_quota_holds_a_job_back_and_one_live_job_per_name_on_real_mesos(tmp_path):
    master = RealMesos(tmp_path / "mesos", ["cpus:2;mem:2048;disk:1000;ports:[31000-31999]"])
    try:
        master.operator({"type": "UPDATE_QUOTA", "update_quota": {"force": True, "quota_configs": [
            {"role": "team-a", "guarantees": {}, "limits": {"cpus": {"value": 1.2}}}]}})
        run_quota_and_one_job_per_name(tmp_path, master)
    finally:
        master.stop()


def test_main_example_in_a_role_on_an_agent_wholly_reserved_to_it_on_real_mesos(tmp_path):
    master = RealMesos(tmp_path / "mesos", ["cpus(ml-team):4;mem(ml-team):8192;disk(ml-team):20000;ports(ml-team):[31000-31999]"])
    try:
        run_main_example_in_role(tmp_path, master)
    finally:
        master.stop()


def test_a_job_in_two_roles_uses_the_reservations_of_both_on_real_mesos(tmp_path):
    master = RealMesos(tmp_path / "mesos", ["cpus(team-a):1;mem(team-a):1024;disk:1000;ports(team-a):[31000-31999]",
                        "cpus(team-b):1;mem(team-b):1024;disk:1000;ports(team-b):[32000-32999]"])
    try:
        run_two_roles_job(tmp_path, master)
    finally:
        master.stop()
