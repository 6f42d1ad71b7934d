"""A busy cluster queues jobs instead of failing them; a job that can never fit fails at once.

The scenarios run against any master with ``address`` and ``state()``: the embedded one here
(``tfmesos local-master`` with small agents), a real Apache Mesos in test_queue_real_mesos.py.
The jobs run ``sleep``, not TensorFlow: the cluster is what is tested, at little CPU.
"""
from __future__ import annotations

import json
import re
import subprocess
import urllib.request

from tests.e2e.harness import TFMESOS, LocalMaster, eventually, run_scheduler, wait_gone, write_options
from tests.e2e.test_teams import kill_all

# Two agents of 1 cpu: a job of one 0.8-cpu task (0.9 with its executor) takes one agent.
AGENT_FLAGS = ["--cpus", "1", "--mem", "1024"]
QUEUED = (r"queued \(the cluster fits the job, but not now\): needs cpus 0.9, mem 192 MB; free cpus [\d.]+, "
          r"mem \d+ MB of cpus 2, mem 2048 MB; held by other frameworks cpus [\d.]+, mem \d+ MB: queue-\d \(\*\)")


def _job(tmp_path, name: str, command: str, count: int = 1, cpus: float = 0.8, **policies):
    return write_options(tmp_path / f"{name}.json", service={"name": name}, job={"command": command},
                         roles={"chief": {"count": 1, "cpus": cpus, "mem": 128},
                                "worker": {"count": count - 1, "cpus": cpus, "mem": 128}},
                         policies={"placement_timeout_seconds": 5, **policies})


def _run(opts, master):
    return run_scheduler(opts, "--master", master.address, "--state-dir", str(opts.parent / f"state-{opts.stem}"))


def run_four_jobs_on_a_cluster_that_fits_two(tmp_path, master, sleep: float = 10) -> None:
    """Four jobs at once, two fit: the other two are queued (the console and /v1/status say so,
    with the figures) well past their placement timeout (5 s), the younger behind the older, and
    all four SUCCEED. Each job runs ``sleep`` seconds and then until the test has read the queue (a
    gate file): a loaded machine's CLI calls once outlasted the 10 s a queued job waited (CI)."""
    runs = []
    gate = tmp_path / "queue-read"
    try:
        for i in range(4):
            command = f'sleep {sleep}; while [ ! -e "{gate}" ]; do sleep 0.2; done'
            runs.append(_run(_job(tmp_path, f"queue-{i}", command), master))
        for run in runs:
            run.wait_for(r"scheduler API on (\S+/v1/status)", 60)
        # Which two run is the offers' to say: a job may say it is queued while an agent's offer is
        # out to another job, and be placed when that job turns it down. Once two run, they hold
        # both agents until the gate, and the other two are queued for sure.
        def running() -> list:
            return [r for r in runs if "chief:0 TASK_RUNNING" in r.output]

        eventually(lambda: len(running()) >= 2, 60, "two jobs to run")
        started = running()
        assert len(started) == 2, "a third job ran while two held both agents"
        waiting = eventually(lambda: next((r for r in runs if r not in started and re.search(QUEUED, r.output)), None),
                             30, "a job to say it is queued")
        # The status API says so too while the job waits (for a 10 s job to end).
        url = waiting.wait_for(r"scheduler API on (\S+/v1/status)", 5).group(1)
        with urllib.request.urlopen(url, timeout=10) as resp:
            snap = json.load(resp)
        assert snap["phase"] == "PLACING" and re.search(QUEUED, snap["queued"]) and snap["queued_since"], snap
        # And so do `tfmesos status NAME` and `tfmesos jobs` (the jobs running from this machine).
        name = snap["name"]
        for command in (["status", name], ["jobs"]):
            out = subprocess.run(TFMESOS + command + ["--state-dir", str(tmp_path / f"state-{name}")],
                                 capture_output=True, text=True, timeout=60)
            assert re.search(QUEUED + r".* \(for \d", out.stdout), (command, out.stdout, out.stderr)
            assert command[0] != "jobs" or f"{name}  QUEUED  for" in out.stdout, out.stdout
        gate.touch()
        for run in runs:
            assert run.wait(120) == 0, run.output[-3000:]
            assert "cannot be placed" not in run.output
        queued = [r for r in runs if re.search(QUEUED, r.output)]
        assert len(queued) >= 2, "two of the four waited queued:\n" + "\n".join(r.output[-1500:] for r in runs)
        # Submission order: the youngest queued job waited behind an older one still being placed.
        assert any(re.search(r"; behind queue-\d, submitted earlier and still being placed", r.output) for r in runs), \
            "\n".join(r.output[-1500:] for r in runs)
        for i in range(4):
            assert f"job queue-{i} SUCCEEDED" in runs[i].output
    finally:
        kill_all(runs)


def run_never_fits_fails_at_once(tmp_path, master) -> None:
    """A task larger than every agent, and a gang larger than all agents together, fail long before
    their placement timeout (120 s), naming the resource."""
    big_task = _run(_job(tmp_path, "too-big", "true", cpus=1.6, placement_timeout_seconds=120), master)
    big_gang = _run(_job(tmp_path, "too-many", "true", count=3, placement_timeout_seconds=120), master)
    try:
        assert big_task.wait(30) != 0, big_task.output
        assert re.search(r"can never fit this cluster: one chief task needs cpus 1.7 \(executor included\), "
                         r"and the largest of its 2 agent\(s\) has cpus 1", big_task.output), big_task.output
        assert big_gang.wait(30) != 0, big_gang.output
        assert re.search(r"can never fit this cluster: its 3 tasks need cpus 2.7 together, and all 2 "
                         r"agent\(s\) together have cpus 2", big_gang.output), big_gang.output
    finally:
        kill_all([big_task, big_gang])


def test_four_jobs_on_a_cluster_that_fits_two_queue_and_all_succeed(tmp_path):
    master = LocalMaster(tmp_path / "m", agents=2, extra=AGENT_FLAGS)
    try:
        run_four_jobs_on_a_cluster_that_fits_two(tmp_path, master)
        run_never_fits_fails_at_once(tmp_path, master)
    finally:
        master.stop()
    for i in range(4):
        assert not wait_gone(f"queue-{i}", timeout=10)
