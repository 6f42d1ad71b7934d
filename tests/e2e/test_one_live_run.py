"""One name, one live run (issue 39): a second ``tfmesos run`` of a name that is live is refused
before it starts anything, naming the live run, its API and how to stop it, and the first run
stays reachable by ``status``, ``logs`` and ``kill``; of two runs started at once exactly one runs.
A run killed -9 is said to be gone at once by ``status`` and ``jobs``, with its last state known,
and the next run of the name takes the name over. Real ``tfmesos`` processes on the embedded
master, with tasks that print a line and sleep (no TensorFlow: the behaviour does not need it)."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests.e2e.harness import ROOT, TFMESOS, LineProcess, eventually, task_processes, wait_gone

ENV = dict(os.environ, PYTHONPATH=str(ROOT), PATH=f"{os.path.dirname(sys.executable)}:{os.environ.get('PATH', '')}")


def _options(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"service": {"name": name},
                                "job": {"command": "echo hello from $TFMESOS_TASK_INDEX; exec sleep 300"},
                                "roles": {"worker": {"count": 2, "cpus": 0.2, "mem": 128}}}))
    return path


@pytest.fixture
def runs():
    """The test's runs; what a failed test left of them (their tasks too) is killed at its end."""
    started: list[tuple[LineProcess, str]] = []

    def start(tmp_path: Path, name: str, *more: str) -> LineProcess:
        run = LineProcess(TFMESOS + ["run", str(_options(tmp_path, name)), "--api-port", "0", *more], env=ENV)
        started.append((run, name))
        return run

    yield start
    for run, name in started:
        if run.proc.poll() is None:
            run.kill(signal.SIGINT)
            try:
                run.wait(60)
            except subprocess.TimeoutExpired:
                run.killpg(signal.SIGKILL)
        for p in task_processes(name):
            try:
                p.kill()
            except psutil.Error:
                pass


def _tfmesos(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(TFMESOS + list(args), env=ENV, capture_output=True, text=True, timeout=120)


def _running(run: LineProcess) -> str:
    """The run's API, once both tasks run."""
    api = run.wait_for(r"scheduler API on http://(\S+)/v1/status", 120).group(1)
    for index in (0, 1):
        run.wait_for(rf"worker:{index} TASK_RUNNING", 120)
    return api


def test_a_second_run_of_a_live_name_is_refused_before_it_starts_and_the_first_stays_reachable(runs, tmp_path):
    name, state = "one-live-run", str(tmp_path / "state")
    first = runs(tmp_path, name, "--state-dir", state)
    api = _running(first)
    second = _tfmesos("run", str(_options(tmp_path, name)), "--api-port", "0", "--state-dir", state)
    assert second.returncode == 2, second.stdout + second.stderr
    said = second.stderr
    assert f"job '{name}': a run of it is live (scheduler pid {first.proc.pid} on this machine" in said, said
    assert f"API {api}" in said and f"'tfmesos kill {name}'" in said and "another service.name" in said, said
    assert "embedded Mesos master" not in second.stdout, "refused before anything started"
    # The first run is untouched: its marker, token and API all still answer for it.
    status = _tfmesos("status", name, "--state-dir", state)
    assert status.returncode == 0 and re.search(rf"^job {name}  phase RUNNING", status.stdout, re.M), status
    logs = _tfmesos("logs", name, "worker:1", "--state-dir", state)
    assert logs.returncode == 0 and "hello from 1" in logs.stdout, logs
    killed = _tfmesos("kill", name, "--state-dir", state)
    assert killed.returncode == 0, killed.stderr
    assert first.wait(60) == 5, first.output[-3000:]
    assert not list((tmp_path / "state" / "live").iterdir()), "its marker, lock and token went with it"


def test_of_two_runs_of_a_name_started_at_once_one_runs_and_the_other_is_refused(runs, tmp_path):
    name, state = "one-of-two", str(tmp_path / "state")
    pair = [runs(tmp_path, name, "--state-dir", state) for _ in range(2)]
    refused = eventually(lambda: [r for r in pair if r.proc.poll() is not None], 60, "one of them refused")
    assert len(refused) == 1 and refused[0].wait(10) == 2, [r.output[-2000:] for r in pair]
    winner = next(r for r in pair if r is not refused[0])
    assert f"a run of it is live (scheduler pid {winner.proc.pid} " in refused[0].output, refused[0].output
    _running(winner)
    winner.kill(signal.SIGINT)
    assert winner.wait(60) == 130, winner.output[-3000:]


def test_a_run_killed_minus_9_is_said_gone_at_once_with_its_last_state_and_the_next_run_takes_its_name(runs, tmp_path):
    name, state = "gone-run", str(tmp_path / "state")
    run = runs(tmp_path, name, "--state-dir", state)
    api = _running(run)
    marker = tmp_path / "state" / "live" / f"{name}.json"
    eventually(lambda: json.loads(marker.read_text())["last"]["tasks"] == {"TASK_RUNNING": 2}, 30,
               "the marker's last state: both tasks running")
    run.kill(signal.SIGKILL)
    run.wait(30)
    assert not wait_gone(name, timeout=5), "the executors of its embedded master end with it (issue 39's bar)"
    for args in ([name], ["--api", api]):  # by its name, and by its API (which answered nothing for 30 s)
        status = _tfmesos("status", *args, "--state-dir", state)
        assert status.returncode == 0, status.stderr
        assert status.stdout.startswith(f"job {name}  GONE: its scheduler (pid {run.proc.pid}, "), status.stdout
        assert re.search(r"last known .*: phase RUNNING, tasks 2: 2 running", status.stdout), status.stdout
    jobs = _tfmesos("jobs", "--state-dir", state)
    assert re.search(rf"^  {name}  GONE \(scheduler pid {run.proc.pid} ended without a word\)  last known RUNNING",
                     jobs.stdout, re.M), jobs.stdout
    kill = _tfmesos("kill", name, "--state-dir", state)
    assert kill.returncode == 2 and "has ended without a word" in kill.stderr, kill.stderr
    again = runs(tmp_path, name, "--state-dir", state)
    again.wait_for(rf"took over its name from an earlier run whose scheduler is gone \(pid {run.proc.pid}, ", 60)
    _running(again)
    again.kill(signal.SIGINT)
    assert again.wait(60) == 130, again.output[-3000:]


def test_with_zookeeper_a_second_run_of_a_live_name_is_refused_from_another_state_directory(runs, tmp_path, zk):
    """--zk: the claim is the job's ZooKeeper node, whatever state directory each run has."""
    name, url = "one-live-zk", f"zk://{zk.hosts}/tfmesos-one-live"
    first = runs(tmp_path, name, "--zk", url, "--state-dir", str(tmp_path / "here"))
    api = _running(first)
    second = _tfmesos("run", str(_options(tmp_path, name)), "--api-port", "0", "--zk", url,
                      "--state-dir", str(tmp_path / "elsewhere"))
    assert second.returncode == 2, second.stdout + second.stderr
    assert f"a run of it is live (scheduler pid {first.proc.pid} on this machine" in second.stderr, second.stderr
    assert f"API {api}" in second.stderr and f"ZooKeeper zk://{zk.hosts}/tfmesos-one-live" in second.stderr, second.stderr
    first.kill(signal.SIGINT)
    assert first.wait(60) == 130, first.output[-3000:]
    again = runs(tmp_path, name, "--zk", url, "--state-dir", str(tmp_path / "elsewhere"))
    _running(again)  # the name is free again: its node went with the first run
    again.kill(signal.SIGINT)
    assert again.wait(60) == 130, again.output[-3000:]
