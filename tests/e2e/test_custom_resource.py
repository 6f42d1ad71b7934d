"""A role asking for a custom Mesos scalar resource ("resources": ["fpgas:1"]).

The scenarios run against any master with ``address`` and ``state()``: the embedded one here
(``tfmesos local-master --agent-resources 0=fpgas:1``), a real Apache Mesos agent started with
``fpgas:1`` in its --resources in test_custom_resource_real_mesos.py. Agent 0 has the only FPGA.
The jobs run ``sleep``, not TensorFlow: the cluster is what is tested, at little CPU.
"""
from __future__ import annotations

import re

from tests.e2e.harness import LocalMaster, eventually, run_scheduler, wait_gone, write_options
from tests.e2e.test_teams import kill_all

AGENT_FLAGS = ["--cpus", "1", "--mem", "1024", "--agent-resources", "0=fpgas:1"]
# What a job of one 0.1-cpu, 32 MB task with one FPGA needs (its executor included).
QUEUED = (r"queued \(the cluster fits the job, but not now\): needs cpus 0.2, mem 96 MB, fpgas 1; "
          r"free cpus [\d.]+, mem \d+ MB, fpgas 0 of cpus 2, mem 2048 MB, fpgas 1; "
          r"held by other frameworks cpus [\d.]+, mem \d+ MB, fpgas 1: fpga-a \(\*\)")


def _job(tmp_path, master, name: str, command: str, resources: list[str], **policies):
    opts = write_options(tmp_path / f"{name}.json", service={"name": name}, job={"command": command},
                         roles={"chief": {"count": 1, "cpus": 0.1, "mem": 32, "resources": resources}},
                         policies={"placement_timeout_seconds": 5, **policies})
    return run_scheduler(opts, "--master", master.address, "--state-dir", str(tmp_path / f"state-{name}"))


def fpga_agent(master) -> str:
    return next(a["id"] for a in master.state()["slaves"] if a["resources"].get("fpgas", 0) > 0)


def task_of(master, framework_name: str) -> dict | None:
    for f in master.state()["frameworks"]:
        if f["name"] == framework_name and f["tasks"]:
            return f["tasks"][0]
    return None


def run_fpga_jobs(tmp_path, master) -> None:
    """A job with an FPGA runs on the agent that offers it (its task holds the FPGA in the master's
    state); a second one waits queued, naming fpgas, until the first ends, then runs; a job asking
    for a resource no agent has, or more FPGAs than any agent has, fails at once naming it."""
    runs = []
    try:
        first = _job(tmp_path, master, "fpga-a", "sleep 8", ["fpgas:1"])
        runs.append(first)
        task = eventually(lambda: task_of(master, "fpga-a"), 60, "fpga-a's task to be launched")
        assert task["slave_id"] == fpga_agent(master), task
        assert task["resources"].get("fpgas") == 1, task["resources"]
        second = _job(tmp_path, master, "fpga-b", "true", ["fpgas:1"])
        runs.append(second)
        second.wait_for(QUEUED, 60)
        assert first.wait(120) == 0, first.output[-3000:]
        assert second.wait(120) == 0, second.output[-3000:]
        assert "job fpga-b SUCCEEDED" in second.output
        assert "cannot be placed" not in second.output

        nowhere = _job(tmp_path, master, "licences", "true", ["licences:1"], placement_timeout_seconds=120)
        too_many = _job(tmp_path, master, "fpga-2", "true", ["fpgas:2"], placement_timeout_seconds=120)
        runs += [nowhere, too_many]
        assert nowhere.wait(30) != 0, nowhere.output
        assert ("the job can never fit this cluster: chief ask(s) for licences, and none of its 2 agent(s) "
                "has any licences") in nowhere.output, nowhere.output
        assert too_many.wait(30) != 0, too_many.output
        assert re.search(r"can never fit this cluster: one chief task needs fpgas 2 \(executor included\), "
                         r"and the largest of its 2 agent\(s\) has fpgas 1", too_many.output), too_many.output
    finally:
        kill_all(runs)


def test_a_role_with_fpgas_runs_where_they_are_queues_while_taken_and_never_fits_without(tmp_path):
    master = LocalMaster(tmp_path / "m", agents=2, extra=AGENT_FLAGS)
    try:
        assert sorted(a["resources"].get("fpgas", 0) for a in master.state()["slaves"]) == [0, 1]  # /state shows it
        run_fpga_jobs(tmp_path, master)
    finally:
        master.stop()
    for name in ("fpga-a", "fpga-b"):
        assert not wait_gone(name, timeout=10)
