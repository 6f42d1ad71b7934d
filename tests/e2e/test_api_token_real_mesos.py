"""test_api_token.py's two teams against a real Apache Mesos master and agents, each team with
its principal (Basic authentication, ACLs) and role: team B's task, which knows team A's
scheduler address, gets 401 from POST /v1/shutdown and /v1/restart; A's job goes on to SUCCEEDED;
A's `tfmesos kill NAME` with A's state stops it; the token is nowhere but its 0600 file.

Not part of `make test`: collected only when TFMESOS_REAL_MESOS names the folder of the real-mesos
scripts, as `make test-real-mesos` does (see real_mesos.py)."""
from __future__ import annotations

import pytest

from tests.e2e.test_api_token import run_team_b_cannot_stop_team_a
from tests.e2e.test_teams import SECRETS
from tests.e2e.test_teams_real_mesos import two_teams_master

pytestmark = pytest.mark.slow


def test_another_teams_task_gets_401_and_the_owners_kill_name_works_on_real_mesos(tmp_path):
    master = two_teams_master(tmp_path, "cpus(team-a):1;mem(team-a):1024;disk:1000;ports:[31000-31999]")
    try:
        run_team_b_cannot_stop_team_a(
            tmp_path, master,
            {"service": {"role": "team-a", "principal": "a"}, "env": {"MESOS_SECRET": SECRETS["a"]}},
            {"service": {"role": "team-b", "principal": "b"}, "env": {"MESOS_SECRET": SECRETS["b"]}},
            ("--master", master.address), ("--master", master.address))
    finally:
        master.stop()
