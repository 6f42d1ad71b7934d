"""Many teams, one cluster: roles with reservations and quota, principals and ACLs, a GPU agent,
three jobs side by side on one embedded master (``tfmesos local-master`` with the team flags)."""
from __future__ import annotations

import json
import os
import re
import signal
import urllib.request

from tests.e2e.harness import LocalMaster, run_scheduler, wait_gone, write_options
from tests.e2e.test_scenarios import run_main_example

SECRETS = {"a": "secret-a", "b": "secret-b", "c": "secret-c"}
ACLS = {"register_frameworks": [
    {"principals": {"values": ["a"]}, "roles": {"values": ["team-a"]}},
    {"principals": {"values": ["b"]}, "roles": {"values": ["team-b"]}},
    {"principals": {"values": ["c"]}, "roles": {"values": ["*"]}},
    {"principals": {"type": "ANY"}, "roles": {"type": "NONE"}},
]}


def _options(tmp_path, name: str, role: str, principal: str, gpus: int = 0, **extra):
    task = {"count": 1, "cpus": 0.4, "mem": 128, "gpus": gpus}
    return write_options(
        tmp_path / f"{name}.json",
        service={"name": name, "role": role, "principal": principal},
        job={"command": 'echo "$TFMESOS_JOB_NAME of ' + name + ' sees GPUs [$CUDA_VISIBLE_DEVICES]"; sleep 3'},
        roles={"chief": task, "worker": dict(task, count=0 if gpus else 1, gpus=0)},
        policies={"placement_timeout_seconds": 60}, **extra)


def _run(opts, master, principal: str, *args: str):
    env = dict(os.environ, MESOS_SECRET=SECRETS[principal])
    if "--state-dir" not in args:  # never the shared ~/.tfmesos/state
        args = (*args, "--state-dir", str(opts.parent / f"state-{opts.stem}"))
    return run_scheduler(opts, "--master", master.address, *args, env=env)


def _agents_of(state: dict, name: str) -> set[str]:
    frameworks = state.get("frameworks", []) + state.get("completed_frameworks", [])
    return {t["slave_id"].rsplit("-", 1)[1] for f in frameworks if f["name"] == name
            for t in f.get("tasks", []) + f.get("completed_tasks", [])}


def kill_all(runs) -> None:
    for run in runs:
        if run is not None and run.proc.poll() is None:
            run.killpg(signal.SIGKILL)


# The scenarios below run against any master with ``address`` and ``state()``: the embedded one
# here, a real Apache Mesos in test_teams_real_mesos.py. Agents are S0, S1, ... in order.

def run_two_teams(tmp_path, master, gpu_job: bool, gone_within: float) -> None:
    """Team A on S0 (its reservation and a shared pool), team B on S1 (its reservation) and, with
    ``gpu_job``, a GPU job in '*' on the GPU agent S2, side by side; B's principal refused role
    team-a; A's scheduler killed and restarted without disturbing the others."""
    runs = []
    try:
        a_opts = _options(tmp_path, "team-a-job", "team-a", "a")
        a = _run(a_opts, master, "a", "--state-dir", str(tmp_path / "state"))
        b = _run(_options(tmp_path, "team-b-job", "team-b", "b"), master, "b")
        gpu = _run(_options(tmp_path, "gpu-job", "*", "c", gpus=1), master, "c") if gpu_job else None
        intruder = _run(_options(tmp_path, "b-as-a", "team-a", "b"), master, "b")
        runs = [a, b, gpu, intruder]

        # B's principal may not take role team-a: Mesos' own words, and the run ends at once.
        assert intruder.wait(60) == 4, intruder.output  # 4: the master refused the framework
        assert "Not authorized to register framework  with roles { team-a }" in intruder.output

        # Team A's scheduler dies while its tasks run: team B's and the GPU job go on untouched.
        a.wait_for(r"chief:0 TASK_RUNNING", 90)
        a.kill(signal.SIGKILL)
        assert b.wait(120) == 0, b.output
        if gpu is not None:
            assert gpu.wait(120) == 0, gpu.output
            assert "chief of gpu-job sees GPUs [0]" in gpu.output
        # A restarted scheduler adopts team A's tasks and finishes its job.
        a = _run(a_opts, master, "a", "--state-dir", str(tmp_path / "state"))
        runs.append(a)
        assert a.wait(120) == 0, a.output
        assert "resuming job 'team-a-job'" in a.output

        state = master.state()
        assert _agents_of(state, "team-a-job") == {"S0"}
        assert _agents_of(state, "team-b-job") == {"S1"}
        if gpu is not None:
            assert _agents_of(state, "gpu-job") == {"S2"}
        assert not any(f["name"] == "b-as-a" for f in state["frameworks"] + state["completed_frameworks"])
        for name in ("team-a-job", "team-b-job") + (("gpu-job",) if gpu is not None else ()):
            assert not wait_gone(name, timeout=gone_within), f"{name} left processes behind"
    finally:
        kill_all(runs)


def run_quota_and_one_job_per_name(tmp_path, master) -> None:
    """Role team-a's quota limit (1.2 cpus) holds a second job back, which says why and then runs;
    the same service name in another role is refused, naming the running job."""
    runs = []
    try:
        first = run_scheduler(write_options(
            tmp_path / "first.json", service={"name": "first", "role": "team-a"},
            job={"command": "sleep 6"}, roles={"chief": {"count": 1, "cpus": 0.9, "mem": 128}}), "--master", master.address,
            "--state-dir", str(tmp_path / "state"))
        runs.append(first)
        first.wait_for(r"chief:0 TASK_RUNNING", 60)
        # The same service name again, in another role: refused, naming the running job.
        twin = run_scheduler(write_options(
            tmp_path / "twin.json", service={"name": "first", "role": "team-b"},
            job={"command": "true"}, roles={"chief": {"count": 1, "cpus": 0.1, "mem": 64}}), "--master", master.address,
            "--state-dir", str(tmp_path / "twin-state"))  # another team's machine
        runs.append(twin)
        assert twin.wait(30) == 2, twin.output
        assert re.search(r"a job named 'first' is already running on \S+ as framework \S+ \(role team-a\)",
                         twin.output), twin.output
        second = run_scheduler(write_options(
            tmp_path / "second.json", service={"name": "second", "role": "team-a"},
            job={"command": "true"}, roles={"chief": {"count": 1, "cpus": 0.9, "mem": 128}},
            policies={"placement_timeout_seconds": 120}), "--master", master.address,
            "--state-dir", str(tmp_path / "state"))
        runs.append(second)
        # Said as soon as placement is held back (within seconds; it once waited 0.8 x 120 s).
        quota = r"waiting for role team-a's quota \(not for offers\): cpus 1 needed, limit 1.2, 1 held by others"
        second.wait_for(quota, 30)
        status_url = second.wait_for(r"scheduler API on (\S+/v1/status)", 5).group(1)
        with urllib.request.urlopen(status_url, timeout=10) as resp:
            assert re.search(quota, resp.read().decode()), "the status API says so too"
        assert first.wait(60) == 0, first.output
        assert second.wait(60) == 0, second.output
        assert "cannot be placed" not in second.output
    finally:
        kill_all(runs)


def run_main_example_in_role(tmp_path, master) -> None:
    """The main example with service.role ml-team on an agent whose resources are all reserved to
    it, with every assertion of test_scenarios.py's run_main_example (this is its run)."""
    slave = master.state()["slaves"][0]
    assert slave["unreserved_resources"]["cpus"] == 0 and slave["reserved_resources"]["ml-team"]["cpus"] == 4
    run_main_example(tmp_path, master, role="ml-team")


def test_two_teams_and_a_gpu_job_side_by_side(tmp_path):
    credentials = tmp_path / "credentials"
    credentials.write_text(json.dumps({"credentials": [{"principal": p, "secret": s} for p, s in SECRETS.items()]}))
    master = LocalMaster(tmp_path / "m", agents=3, extra=[
        "--cpus", "1", "--mem", "1024", "--credentials", str(credentials), "--acls", json.dumps(ACLS),
        "--reserve", "0=cpus(team-a):1;mem(team-a):1024;cpus:0.5;mem:512",
        "--reserve", "1=cpus(team-b):1;mem(team-b):1024",
        "--reserve", "2=gpus:1",
        "--quota", "team-a=cpus:1.5", "--weights", "team-a=1,team-b=1"])
    try:
        run_two_teams(tmp_path, master, gpu_job=True, gone_within=10)
    finally:
        master.stop()


def test_a_job_held_back_by_its_roles_quota_waits_says_why_then_runs(tmp_path):
    master = LocalMaster(tmp_path / "m", agents=1, extra=["--cpus", "2", "--mem", "2048", "--quota", "team-a=cpus:1.2"])
    try:
        run_quota_and_one_job_per_name(tmp_path, master)
    finally:
        master.stop()


def test_main_example_in_a_role_on_an_agent_wholly_reserved_to_it(tmp_path):
    master = LocalMaster(tmp_path / "m", agents=1, extra=["--reserve", "0=ml-team"])
    try:
        run_main_example_in_role(tmp_path, master)
    finally:
        master.stop()


def run_two_roles_job(tmp_path, master) -> None:
    """A job in team-a and team-b on agents S0 and S1, each wholly reserved to one of them."""
    task = {"count": 1, "cpus": 0.6, "mem": 128}
    opts = write_options(tmp_path / "two.json", service={"name": "two-roles", "role": "team-a,team-b"},
                         job={"command": "sleep 1"}, roles={"chief": task, "worker": task},
                         policies={"placement_timeout_seconds": 30})
    run = run_scheduler(opts, "--master", master.address, "--state-dir", str(tmp_path / "state"))
    try:
        assert run.wait(90) == 0, run.output
    finally:
        kill_all([run])
    state = master.state()
    (framework,) = [f for f in state["frameworks"] + state["completed_frameworks"] if f["name"] == "two-roles"]
    assert sorted(framework["roles"]) == ["team-a", "team-b"]
    assert _agents_of(state, "two-roles") == {"S0", "S1"}
    roles_used = {t["role"] for t in framework.get("tasks", []) + framework.get("completed_tasks", [])}
    assert roles_used == {"team-a", "team-b"}


def test_a_job_in_two_roles_uses_the_reservations_of_both(tmp_path):
    """service.role "team-a,team-b": one MULTI_ROLE framework offered both roles' reservations;
    neither agent alone can hold the job, and there is no shared pool."""
    master = LocalMaster(tmp_path / "m", agents=2, extra=["--cpus", "1", "--mem", "1024",
                                                          "--reserve", "0=team-a", "--reserve", "1=team-b"])
    try:
        run_two_roles_job(tmp_path, master)
    finally:
        master.stop()
