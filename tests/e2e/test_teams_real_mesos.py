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
import re
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from .harness import ROOT, accuracy, run_scheduler, wait_gone, write_options
from .test_teams import ACLS, SECRETS, _agents_of, _options, _run, run_two_roles_job

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
            _eventually(lambda: len(self.state()["slaves"]) == index + 1, 60, f"agent {index} to register")

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


def _eventually(probe, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = probe()
        except OSError:
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def _kill_all(runs) -> None:
    for run in runs:
        if run.proc.poll() is None:
            run.killpg(signal.SIGKILL)


def test_two_teams_side_by_side_on_real_mesos(tmp_path):
    credentials = tmp_path / "credentials"
    credentials.write_text(json.dumps({"credentials": [{"principal": p, "secret": s} for p, s in SECRETS.items()]}))
    master = RealMesos(
        ["cpus(team-a):1;mem(team-a):1024;cpus:0.5;mem:512;disk:1000;ports:[31000-31999]",
         "cpus(team-b):1;mem(team-b):1024;disk:1000;ports:[32000-32999]"],
        ["--authenticate_http_frameworks", "--http_framework_authenticators=basic",
         f"--credentials=file://{credentials}", f"--acls={json.dumps(ACLS)}"])
    runs = []
    try:
        a_opts = _options(tmp_path, "team-a-job", "team-a", "a")
        a = _run(a_opts, master, "a", "--state-dir", str(tmp_path / "state"))
        b = _run(_options(tmp_path, "team-b-job", "team-b", "b"), master, "b")
        intruder = _run(_options(tmp_path, "b-as-a", "team-a", "b"), master, "b")
        runs = [a, b, intruder]

        assert intruder.wait(60) == 4, intruder.output  # refused by the real master's ACLs
        assert "Not authorized to register framework  with roles { team-a }" in intruder.output

        a.wait_for(r"chief:0 TASK_RUNNING", 90)
        a.kill(signal.SIGKILL)
        assert b.wait(120) == 0, b.output
        a = _run(a_opts, master, "a", "--state-dir", str(tmp_path / "state"))
        runs.append(a)
        assert a.wait(120) == 0, a.output
        assert "resuming job 'team-a-job'" in a.output

        state = master.state()
        assert _agents_of(state, "team-a-job") == {"S0"}
        assert _agents_of(state, "team-b-job") == {"S1"}
        assert not any(f["name"] == "b-as-a" for f in state["frameworks"] + state["completed_frameworks"])
        for name in ("team-a-job", "team-b-job"):
            assert not wait_gone(name, timeout=30), f"{name} left processes behind"
    finally:
        _kill_all(runs)
        master.stop()


def test_quota_holds_a_job_back_and_one_live_job_per_name_on_real_mesos(tmp_path):
    master = RealMesos(["cpus:2;mem:2048;disk:1000;ports:[31000-31999]"])
    master.operator({"type": "UPDATE_QUOTA", "update_quota": {"force": True, "quota_configs": [
        {"role": "team-a", "guarantees": {}, "limits": {"cpus": {"value": 1.2}}}]}})
    runs = []
    try:
        first = run_scheduler(write_options(
            tmp_path / "first.json", service={"name": "first", "role": "team-a"},
            job={"command": "sleep 6"}, roles={"chief": {"count": 1, "cpus": 0.9, "mem": 128}}), "--master",
            master.address, "--state-dir", str(tmp_path / "state"))
        runs.append(first)
        first.wait_for(r"chief:0 TASK_RUNNING", 60)
        twin = run_scheduler(write_options(
            tmp_path / "twin.json", service={"name": "first", "role": "team-b"},
            job={"command": "true"}, roles={"chief": {"count": 1, "cpus": 0.1, "mem": 64}}), "--master",
            master.address, "--state-dir", str(tmp_path / "twin-state"))
        runs.append(twin)
        assert twin.wait(30) == 2, twin.output
        assert re.search(r"a job named 'first' is already running on \S+ as framework \S+ \(role team-a\)",
                         twin.output), twin.output
        second = run_scheduler(write_options(
            tmp_path / "second.json", service={"name": "second", "role": "team-a"},
            job={"command": "true"}, roles={"chief": {"count": 1, "cpus": 0.9, "mem": 128}},
            policies={"placement_timeout_seconds": 2}), "--master", master.address,
            "--state-dir", str(tmp_path / "state"))
        runs.append(second)
        second.wait_for(r"waiting for role team-a's quota \(not for offers\)", 30)
        assert first.wait(60) == 0, first.output
        assert second.wait(60) == 0, second.output
    finally:
        _kill_all(runs)
        master.stop()


def test_main_example_in_a_role_on_an_agent_wholly_reserved_to_it_on_real_mesos(tmp_path):
    master = RealMesos(["cpus(ml-team):4;mem(ml-team):8192;disk(ml-team):20000;ports(ml-team):[31000-31999]"])
    try:
        slave = master.state()["slaves"][0]
        assert slave["unreserved_resources"]["cpus"] == 0 and slave["reserved_resources"]["ml-team"]["cpus"] == 4
        opts = write_options(tmp_path / "o.json", base=ROOT / "examples" / "pss_digits" / "options.json",
                             service={"name": "ml-team-pss", "role": "ml-team"})
        run = run_scheduler(opts, "--master", master.address, "--state-dir", str(tmp_path / "state"))
        try:
            assert run.wait(300) == 0, run.output[-4000:]
        finally:
            _kill_all([run])
        assert accuracy(run.output) >= 0.9
    finally:
        master.stop()


def test_a_job_in_two_roles_uses_the_reservations_of_both_on_real_mesos(tmp_path):
    master = RealMesos(["cpus(team-a):1;mem(team-a):1024;disk:1000;ports(team-a):[31000-31999]",
                        "cpus(team-b):1;mem(team-b):1024;disk:1000;ports(team-b):[32000-32999]"])
    try:
        run_two_roles_job(tmp_path, master)
    finally:
        master.stop()
