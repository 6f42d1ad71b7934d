"""``tfmesos run --dry-run --output json`` prints what a run would send, and the embedded master
accepts it as printed: the FrameworkInfo subscribes, the TaskInfos launch and reach TASK_RUNNING."""
from __future__ import annotations

import base64
import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from localmesos import LocalMaster, Tuning
from tfmesos.client.dry_run import DRY_RUN_AGENT_ID, DRY_RUN_OFFER_ID, dry_run, synthetic_offer
from tfmesos.core.job.cluster_spec_sync import INLINE_MAX_ADDRESSES
from tfmesos.core.spec import EXECUTOR_CPUS, EXECUTOR_MEM
from tfmesos.mesos.messages import ClusterSpecMessage
from tfmesos.options.jobspec import job_spec_from_options
from tfmesos.options.load import resolve_options
from tests.localmesos.sandbox_procs import assert_no_processes
from tests.localmesos.scheduler_client import RawScheduler, launch  # the embedded master's tests' raw v1 scheduler

ROOT = Path(__file__).resolve().parents[2]

SECRET = "hunter2-s3cret"
SLEEP = f"{sys.executable} -c 'import time; time.sleep(60)'"
OPTIONS = {
    "service": {"name": "dry/run", "failover_timeout": 60},
    "job": {"command": SLEEP, "env": [f"TOKEN={SECRET}"]},
    "roles": {"ps": {"count": 1, "cpus": 0.2, "mem": 64, "command": SLEEP, "server": False},
              "worker": {"count": 2, "cpus": 0.3, "mem": 96, "env": [f"PW={SECRET}"]}},
}


def _print_dry_run(tmp_path: Path, *flags: str) -> str:
    path = tmp_path / "job.json"
    path.write_text(json.dumps(OPTIONS))
    run = subprocess.run([sys.executable, "-m", "tfmesos.client.cli", "run", str(path), "--dry-run", *flags],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path,
                         env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)})
    assert run.returncode == 0, run.stderr
    return run.stdout


def _payload(task_info: dict[str, Any]) -> dict[str, Any]:
    return json.loads(base64.b64decode(task_info["data"]))


def test_printed_framework_and_task_infos_are_accepted_by_the_embedded_master(tmp_path: Path) -> None:
    printed = json.loads(_print_dry_run(tmp_path, "--output", "json"))
    infos = printed["task_infos"]
    assert sorted(i["name"] for i in infos) == ["dry/run/job:ps/task:0", "dry/run/job:worker/task:0",
                                                "dry/run/job:worker/task:1"]
    assert [_payload(i) for i in infos] == printed["payloads"]
    master = LocalMaster(agents=1, agent_cpus=2.0, agent_mem=2048.0, agent_disk=1000.0, first_port=31000,
                         ports_per_agent=100, work_dir=tmp_path / "master", tuning=Tuning(stop_grace_period=1.0))
    master.start()
    scheduler = RawScheduler(master.address)
    try:
        scheduler.subscribe(copy.deepcopy(printed["framework_info"]))  # as printed: no field added or changed
        offer = scheduler.next_offers(timeout=15)[0]
        # The only two values a scheduler cannot know before the master gives them: the agent's id
        # (assigned when the agent registers) and the offer's id (new for every offer).
        sent = json.loads(json.dumps(infos).replace(DRY_RUN_AGENT_ID, offer["agent_id"]["value"]))
        assert sent != infos and all(i["agent_id"] == offer["agent_id"] for i in sent)
        assert DRY_RUN_OFFER_ID not in json.dumps(infos)  # the offer id is in the ACCEPT, not the TaskInfos
        reply = launch(scheduler, offer, sent)
        assert reply.status == 202, reply
        # A small gang: each TaskInfo carries the ClusterSpec printed, so no executor asks for it.
        cluster_spec = printed["cluster_spec"]
        assert printed["cluster_spec_in_task_infos"] is True
        for payload in printed["payloads"]:
            carried = ClusterSpecMessage(payload["spec_version"], payload["cluster_z"])
            assert (carried.version, carried.cluster()) == (cluster_spec["version"], cluster_spec["cluster"])
        running: set[str] = set()
        while len(running) < len(sent):
            event = scheduler.stream.wait_for(lambda e: e["type"] in ("UPDATE", "MESSAGE"), 30)
            assert event["type"] == "UPDATE", f"an executor asked, its TaskInfo carried the ClusterSpec: {event}"
            status = event["update"]["status"]
            scheduler.acknowledge(status)
            assert status["state"] == "TASK_RUNNING", status  # refused: TASK_ERROR/DROPPED
            running.add(status["task_id"]["value"])
        assert running == {i["task_id"]["value"] for i in infos}
        scheduler.teardown()
    finally:
        scheduler.close()
        master.stop()
    assert_no_processes(tmp_path / "master")


def test_env_secrets_are_not_printed(tmp_path: Path) -> None:
    for flags in (("--output", "json"), ("--output", "text"), ("--output", "options"), ()):
        out = _print_dry_run(tmp_path, *flags)
        assert SECRET not in out and "<hidden>" in out, flags
    printed = json.loads(_print_dry_run(tmp_path, "--output", "json"))
    # TF_USE_LEGACY_KERAS: every task's by default (job.legacy_keras), masked like any value.
    hidden = {"TF_USE_LEGACY_KERAS": "<hidden>", "TOKEN": "<hidden>", "PW": "<hidden>"}
    assert {p["role"]: p["env"] for p in printed["payloads"]} == {
        "ps": {"TF_USE_LEGACY_KERAS": "<hidden>", "TOKEN": "<hidden>"}, "worker": hidden}
    assert all(_payload(i)["env"].items() <= hidden.items() for i in printed["task_infos"])
    assert printed["options"]["job"]["env"] == ["TOKEN=<hidden>"]
    # The same run asked to show them does: the masking is what hides them above.
    shown = json.loads(_print_dry_run(tmp_path, "--output", "json", "--show-env-values"))
    assert {p["role"]: p["env"]["TOKEN"] for p in shown["payloads"]} == {"ps": SECRET, "worker": SECRET}


def test_the_synthetic_offer_holds_exactly_the_gang() -> None:
    spec = job_spec_from_options(resolve_options(copy.deepcopy(OPTIONS)))
    offer = synthetic_offer(spec)
    totals = {r["name"]: r.get("scalar", {}).get("value") for r in offer["resources"]}
    assert totals["cpus"] == pytest.approx(0.2 + 2 * 0.3 + 3 * EXECUTOR_CPUS)
    assert totals["mem"] == pytest.approx(64 + 2 * 96 + 3 * EXECUTOR_MEM)
    assert offer["resources"][0]["ranges"]["range"] == [{"begin": 31000, "end": 31002}]
    plan = dry_run(spec, python="/opt/py/bin/python3")
    ports = sorted(p["port"] for p in plan.payloads)
    assert ports == [31000, 31001, 31002]
    assert all(i["executor"]["command"]["value"] == "exec /opt/py/bin/python3 -m tfmesos.executor"
               for i in plan.task_infos)
    # The gang's ClusterSpec is shown once, plainly; a small gang's payloads carry it deflated.
    shown = plan.cluster_spec["cluster"]
    assert sorted(shown) == ["ps", "worker"] and len(shown["ps"]) == 1 and len(shown["worker"]) == 2
    assert sorted(shown["ps"] + shown["worker"]) == [f"dry-run-agent:{p}" for p in ports]
    assert plan.inline and all(ClusterSpecMessage(p["spec_version"], p["cluster_z"]).cluster() == shown
                               for p in plan.payloads)
    assert "GPU_RESOURCES" not in json.dumps(plan.framework_info)


def test_the_table_shows_the_executors_share_and_what_the_job_takes_in_all() -> None:
    from tfmesos.client.dry_run import plan_lines

    spec = job_spec_from_options(resolve_options({"job": {"command": "python t.py"}, "roles": {
        "ps": {"count": 1, "cpus": 0.2, "mem": 768}, "worker": {"count": 2, "cpus": 1, "mem": 1024}}}))
    rows = {line.split()[0] if not line.startswith("+") else "+": line.split() for line in plan_lines(spec)}
    assert rows["+"][1:5] == ["executor", f"{EXECUTOR_CPUS:g}", f"{EXECUTOR_MEM:g}", "0"]
    cpus, mem = 0.2 + 2 * 1 + 3 * EXECUTOR_CPUS, 768 + 2 * 1024 + 3 * EXECUTOR_MEM
    assert [float(x) for x in rows["in"][2:4]] == pytest.approx([cpus, mem]), rows["in"]
    assert "3 tasks with their executors" in " ".join(rows["in"])


def test_the_options_reference_says_the_executors_share_the_code_takes() -> None:
    schema = json.loads((ROOT / "config-schema.json").read_text())
    for role, fields in schema["properties"]["roles"]["properties"].items():
        cpus, mem = fields["properties"]["cpus"]["description"], fields["properties"]["mem"]["description"]
        assert f"executor takes {EXECUTOR_CPUS:g} more" in cpus, (role, cpus)
        assert f"executor takes {EXECUTOR_MEM:g} MB more" in mem, (role, mem)


def test_a_gangs_taskinfos_grow_linearly_the_clusterspec_shown_once() -> None:
    """Issue 40: every TaskInfo carried the ClusterSpec (31 MB of TaskInfos for 1,000 workers)."""
    def plan(workers: int):
        return dry_run(job_spec_from_options(resolve_options({
            "service": {"name": "pss"}, "job": {"command": "python train.py"},
            "roles": {"ps": {"count": 2, "cpus": 0.1, "mem": 64}, "worker": {"count": workers, "cpus": 0.1, "mem": 64}}})))

    above = INLINE_MAX_ADDRESSES - 1  # 2 ps and these workers: one address more than is carried
    plans = {n: plan(n) for n in (10, INLINE_MAX_ADDRESSES - 2, above, 1000)}
    per_task = {n: max(len(json.dumps(i)) for i in p.task_infos) for n, p in plans.items()}
    big = plans[1000]
    assert not big.inline and not plans[above].inline, "above the threshold each executor asks"
    assert per_task[1000] < per_task[above] * 1.01, per_task  # a task's TaskInfo does not grow with the gang
    assert sum(len(json.dumps(i)) for i in big.task_infos) < 3_000_000
    assert len(big.cluster_spec["cluster"]["worker"]) == 1000 and len(big.cluster_spec["cluster"]["ps"]) == 2
    assert all(p["cluster_z"] == "" for p in big.payloads)
    # A small gang's TaskInfos carry it, deflated: at the threshold, under 1 kB more per task.
    for n in (10, INLINE_MAX_ADDRESSES - 2):
        small = plans[n]
        assert small.inline and len({p["cluster_z"] for p in small.payloads}) == 1
        carried = ClusterSpecMessage(small.payloads[0]["spec_version"], small.payloads[0]["cluster_z"])
        assert carried.cluster() == small.cluster_spec["cluster"] and len(carried.cluster()["worker"]) == n
        assert per_task[n] < per_task[above] + 1000, per_task
