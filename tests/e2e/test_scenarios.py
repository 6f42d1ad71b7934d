"""What users do, written once and run against any master (``address``, ``state()``): the embedded
one here, a real Apache Mesos in test_scenarios_real_mesos.py, with the same assertions.

MultiWorkerMirrored, `tfmesos logs` and ``--follow`` (read through the agent's ``/files`` API), what a
task sees of its executor, and a 100-task gang over three agents all RUNNING at once; the main
example (``run_main_example``) runs in a role, in test_teams.py.
"""
from __future__ import annotations

import os
import re

import pytest

from tests.e2e.harness import (
    ROOT,
    TFMESOS,
    LineProcess,
    LocalMaster,
    accuracy,
    eventually,
    run_scheduler,
    wait_gone,
    write_options,
)
from tests.e2e.test_recovery import task_ids

PSS = ROOT / "examples" / "pss_digits" / "options.json"
MWMS = ROOT / "examples" / "mwms_digits" / "options.json"


def _run(tmp_path, master, opts, *args: str) -> LineProcess:
    return run_scheduler(opts, "--master", master.address, "--state-dir", str(tmp_path / "state"), *args)


def _example(tmp_path, master, options, name: str, tasks: int, **service: str) -> str:
    """Run an example, as service ``name`` (and the other ``service`` options given), to its end:
    exit 0, accuracy, each task id once, nothing left; its output. (A name of this test's own:
    wait_gone looks for it machine-wide, and other tests run the examples under their own names
    side by side.)"""
    run = _run(tmp_path, master, write_options(tmp_path / "example.json", options, service={"name": name, **service}))
    try:
        assert run.wait(300) == 0, run.output[-4000:]
    finally:
        run.killpg()
    assert accuracy(run.output) >= 0.9
    ids = task_ids(master.state(), name)
    assert len(ids) == len(set(ids)) == tasks, ids
    assert not wait_gone(name, timeout=10)
    return run.output


def run_main_example(tmp_path, master, role: str = "") -> None:
    """The main example (parameter servers): trains to accuracy; the servers (the built-in
    tfmesos.task.tfserver) serve until the chief is done, and end with exit 0 when we stop them.
    ``role``: run as that service.role (test_teams.py's run_main_example_in_role, on an agent
    wholly reserved to it: the main example's run on both masters)."""
    name = f"{role}-pss" if role else "scenario-pss"
    out = _example(tmp_path, master, PSS, name, tasks=4, **({"role": role} if role else {}))
    assert f"job {name} SUCCEEDED: chief:0 finished" in out
    for server in ("ps:0", "worker:0", "worker:1"):
        assert re.search(rf"{server} +127\.0\.0\.1:\d+ +TASK_KILLED +restarts 0 exit 0 \(ended when asked to stop\)",
                         out), out[-3000:]
    assert re.search(r"chief:0 +127\.0\.0\.1:\d+ +TASK_FINISHED", out)


def run_mwms_example(tmp_path, master) -> None:
    """MultiWorkerMirrored: every worker trains and finishes."""
    out = _example(tmp_path, master, MWMS, "scenario-mwms", tasks=2)
    assert len(re.findall(r"worker:\d +127\.0\.0\.1:\d+ +TASK_FINISHED", out)) == 2


def run_logs_and_follow(tmp_path, master) -> None:
    """`tfmesos logs --follow` prints a running task's output as it comes, from its sandbox (the
    agent's /files API), and ends with the job; after the job, `tfmesos logs NAME` reads it back."""
    name = "logs-follow"
    gate = tmp_path / "go"
    opts = write_options(
        tmp_path / "logs.json", service={"name": name},
        job={"command": 'for i in 1 2 3; do echo "line $i"; done; echo "to stderr" >&2; '
                        'while [ ! -e "$GATE" ]; do sleep 0.2; done; echo "line 4"',
             "env": [f"GATE={gate}"]},
        roles={"chief": {"count": 1, "cpus": 0.2, "mem": 64}})
    run = _run(tmp_path, master, opts)
    follow = None
    try:
        api = run.wait_for(r"scheduler API on http://(\S+)/v1/status", 60).group(1)
        env = {**os.environ, "TFMESOS_API": api, "PYTHONPATH": str(ROOT)}
        follow = LineProcess(TFMESOS + ["logs", "chief:0", "--follow"], env=env)
        follow.wait_for(r"^line 3$", 60)
        assert "line 4" not in follow.output
        gate.touch()  # the task writes its last line: --follow shows it, then ends with the job
        follow.wait_for(r"^line 4$", 30)
        assert run.wait(60) == 0, run.output[-3000:]
        assert follow.wait(30) == 0, follow.output
    finally:
        for proc in (follow, run):
            if proc is not None:
                proc.killpg()
    assert [line for line in follow.output.splitlines() if line.startswith("line")] == [
        "line 1", "line 2", "line 3", "line 4"]
    where = ["--state-dir", str(tmp_path / "state")]
    tail = LineProcess(TFMESOS + ["logs", name, "chief:0", "--tail", "2", *where])
    assert tail.wait(30) == 0, tail.output
    assert [line for line in tail.output.splitlines() if line.startswith("line")] == ["line 3", "line 4"], tail.output
    errors = LineProcess(TFMESOS + ["logs", name, "chief:0", "--stderr", *where])
    assert errors.wait(30) == 0, errors.output
    assert "to stderr" in errors.output
    assert not wait_gone(name, timeout=10)


def run_gang(tmp_path, master, tasks: int = 100) -> float:
    """A gang of ``tasks`` over every agent, all RUNNING at once (each waits for a gate the test
    opens once the last is RUNNING), each task id once. Returns seconds from the framework's
    registration to the last TASK_RUNNING, as the scheduler's console stamps them."""
    name = "gang"
    gate = tmp_path / "gang-go"
    opts = write_options(
        tmp_path / "gang.json", service={"name": name},
        job={"command": 'while [ ! -e "$GATE" ]; do sleep 0.5; done', "env": [f"GATE={gate}"]},
        roles={"worker": {"count": tasks, "cpus": 0.01, "mem": 32, "restart_policy": "Never"}},
        # A task may take as long to start as the test waits for all of them: on a loaded machine
        # an agent starts its executors (each a Python process) one after another, and the 300 s
        # default once ended the gang with tasks subscribed but not yet RUNNING.
        policies={"success": "all_workers", "placement_timeout_seconds": 300, "startup_timeout_seconds": 600})
    run = _run(tmp_path, master, opts)
    stamp = r"\[tfmesos +([0-9.]+)s\]"
    try:
        registered = float(run.wait_for(stamp + r" registered as framework", 60).group(1))
        eventually(lambda: run.proc.poll() is not None
                   or len(set(re.findall(r"\] (worker:\d+) TASK_RUNNING", run.output))) == tasks, 600, "all RUNNING")
        # What the scheduler said, without the sandbox tails it quotes for each ended task (100 of them).
        assert run.proc.poll() is None, "\n".join(l for l in run.output.splitlines() if "  | " not in l)[-3000:]
        last = max(float(m.group(1)) for m in re.finditer(stamp + r" worker:\d+ TASK_RUNNING", run.output))
        assert not re.search(r"TASK_(FINISHED|FAILED|LOST|KILLED)", run.output), "all RUNNING at once"
        gate.touch()
        assert run.wait(300) == 0, run.output[-3000:]
    finally:
        run.killpg()
    assert len(re.findall(r"launch worker:\d+ as ", run.output)) == tasks, "each task launched once"
    state = master.state()
    ids = task_ids(state, name)
    assert len(ids) == len(set(ids)) == tasks
    agents = {t["slave_id"] for f in state["frameworks"] + state["completed_frameworks"] if f["name"] == name
              for t in f.get("tasks", []) + f.get("completed_tasks", [])}
    assert len(agents) == len(state["slaves"]), "the gang spans every agent"
    assert not wait_gone(name, timeout=30)
    return last - registered


def run_executor_life(tmp_path, master) -> None:
    """What a task sees of its executor and agent: the MESOS_* variables (recovery settings
    included, as the executor driver reads them), its sandbox as working and temporary directory,
    and, when the scheduler stops it, SIGTERM first with time to finish (the kill grace period)."""
    name = "executor-life"
    dump = ("env | grep -E '^(MESOS_[A-Z_]+|TMPDIR|TFMESOS_SERVICE)=' | sort; echo \"PWD=$(pwd -P)\"; "
            "trap 'echo got TERM; sleep 1; echo finished after TERM; exit 0' TERM; echo ready; "
            "while :; do sleep 0.2; done")
    opts = write_options(
        tmp_path / "life.json", service={"name": name},
        job={"command": "if [ $TFMESOS_JOB_NAME = chief ]; then sleep 2; else " + dump + "; fi"},
        roles={"chief": {"count": 1, "cpus": 0.1, "mem": 64},
               "worker": {"count": 1, "cpus": 0.1, "mem": 64}})
    run = _run(tmp_path, master, opts)
    try:
        assert run.wait(120) == 0, run.output[-3000:]
    finally:
        run.killpg()
    assert re.search(r"worker:0 TASK_KILLED: exit 0 \(ended when asked to stop\)", run.output), run.output[-3000:]
    logs = LineProcess(TFMESOS + ["logs", name, "worker:0", "--state-dir", str(tmp_path / "state")])
    assert logs.wait(30) == 0, logs.output
    lines = logs.output.splitlines()
    env = dict(line.split("=", 1) for line in lines if re.match(r"[A-Z_]+=", line))
    sandbox = env["MESOS_SANDBOX"]
    assert env["PWD"] == os.path.realpath(sandbox) and env["MESOS_DIRECTORY"] == sandbox
    assert env["TMPDIR"] == sandbox + "/tmp"
    assert env["MESOS_EXECUTOR_ID"].startswith(name + ".worker.0.") and env["TFMESOS_SERVICE"] == name
    assert re.fullmatch(r"127\.0\.0\.1:\d+", env["MESOS_AGENT_ENDPOINT"])
    assert env["MESOS_FRAMEWORK_ID"] and env["MESOS_SLAVE_ID"].startswith(env["MESOS_FRAMEWORK_ID"].rsplit("-", 1)[0])
    assert (env["MESOS_CHECKPOINT"], env["MESOS_RECOVERY_TIMEOUT"], env["MESOS_SUBSCRIPTION_BACKOFF_MAX"]) == (
        "1", "15mins", "2secs")
    assert env["MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD"] == "5secs"
    assert lines.index("got TERM") < lines.index("finished after TERM"), "SIGTERM, then time to finish"
    assert not wait_gone(name, timeout=10)


# ---------------------------------------------------------------- the embedded master

# The main example's run is test_teams.py's, in a role on an agent wholly reserved to it (run_main_example
# with a role: the same assertions), here and on real Mesos: one run of it, not two.
SCENARIOS = [run_mwms_example, run_logs_and_follow, run_executor_life]


def scenario_id(scenario) -> str:
    return scenario.__name__.removeprefix("run_")


@pytest.mark.parametrize("scenario", SCENARIOS, ids=scenario_id)
def test_scenario(tmp_path, scenario):
    master = LocalMaster(tmp_path / "m", agents=1)
    try:
        scenario(tmp_path, master)
    finally:
        master.stop()


def test_a_100_task_gang_on_three_agents_all_running(tmp_path):
    master = LocalMaster(tmp_path / "m", agents=3, extra=["--cpus", "4", "--mem", "4096"])
    try:
        seconds = run_gang(tmp_path, master)
    finally:
        master.stop()
    print(f"100-task gang on 3 embedded agents: all RUNNING {seconds:.1f} s after registration")
