"""Ctrl-C, SIGTERM and SIGHUP to `tfmesos run`, `tfrun` and a `tfmesos.cluster()` script, and
`tfmesos kill`: real signals to the real process group (as a terminal sends Ctrl-C), on the
embedded master, with jobs of plain `sleep`/listening tasks (no TensorFlow: the behaviour does
not need it). Each test checks the exit code, the summary, that nothing says "failed" or shows a
traceback, and that no process of the run is left (its tasks by their environment, and every
process it had started)."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import psutil
import pytest

from tests.e2e.harness import ROOT, TFMESOS, LineProcess, LocalMaster, eventually, task_processes, wait_gone

PYTHON = sys.executable
ENV = dict(os.environ, PYTHONPATH=str(ROOT), PATH=f"{os.path.dirname(PYTHON)}:{os.environ.get('PATH', '')}")
# A process started with SIGHUP or SIGINT ignored (nohup, a background job) keeps them ignored:
# the runs here start with the defaults, as from a terminal.
DEFAULT_SIGNALS = ["env", "--default-signal=HUP,INT"]
STUBBORN = "trap '' TERM; sleep 300"  # ignores SIGTERM: killing it takes the executor's grace period


def _options(tmp_path: Path, name: str, command: str) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"service": {"name": name}, "job": {"command": command},
                                "roles": {"worker": {"count": 2, "cpus": 0.2, "mem": 128}}}))
    return path


@pytest.fixture
def spawn():
    """Starts the runs of a test; whatever a failed test left of them is killed at its end."""
    runs: list[LineProcess] = []

    def start(argv: list[str]) -> LineProcess:
        runs.append(LineProcess(DEFAULT_SIGNALS + argv, env=ENV))
        return runs[-1]

    yield start
    for run in runs:
        if run.proc.poll() is None:
            left = psutil.Process(run.proc.pid).children(recursive=True)
            run.killpg(signal.SIGKILL)
            for p in left:
                try:
                    os.killpg(p.pid, signal.SIGKILL) if os.getpgid(p.pid) == p.pid else p.kill()
                except (OSError, psutil.Error):
                    pass
            run.wait(30)


def _status(api: str) -> dict:
    with urllib.request.urlopen(f"http://{api}/v1/status", timeout=5) as resp:
        return json.load(resp)


def _start_run(spawn, tmp_path: Path, name: str, command: str = "sleep 300", *more: str) -> tuple[LineProcess, str]:
    """`tfmesos run` on the embedded master, returned once both tasks are RUNNING."""
    run = spawn(TFMESOS + ["run", str(_options(tmp_path, name, command)), "--api-port", "0", *more])
    api = run.wait_for(r"scheduler API on http://(\S+)/v1/status", 120).group(1)
    eventually(lambda: all(t["state"] == "TASK_RUNNING" for t in _status(api)["tasks"]), 120, "both tasks RUNNING")
    return run, api


def _descendants(run: LineProcess) -> list[psutil.Process]:
    found = psutil.Process(run.proc.pid).children(recursive=True)
    assert found, "the run has started processes (the embedded master's, its executors and tasks)"
    return found


def _assert_nothing_left(run: LineProcess, service: str, started: list[psutil.Process]) -> None:
    assert not wait_gone(service, timeout=30), f"{service}: task processes left"
    _, alive = psutil.wait_procs(started, timeout=30)
    assert not [p for p in alive if p.status() != psutil.STATUS_ZOMBIE], f"processes of the run left: {alive}"


def _assert_honest(output: str) -> None:
    assert "Traceback" not in output and not re.search(r"fail", output, re.I), output[-3000:]
    assert "keep running" not in output and "resume" not in output, output[-3000:]


def _assert_stopped(run: LineProcess, name: str, code: int, why: str, started: list[psutil.Process]) -> None:
    """The run exited ``code`` after a summary saying the job ended KILLED ``why`` (a regex)."""
    assert run.wait(120) == code, run.output[-3000:]
    assert re.search(rf"job {name} KILLED: {why}$", run.output, re.M), run.output[-3000:]
    _assert_honest(run.output)
    _assert_nothing_left(run, name, started)


def _killpg(run: LineProcess, sig: int) -> None:
    os.killpg(run.proc.pid, sig)  # the whole process group, as a terminal does


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_stop_signal_to_tfmesos_run_kills_every_task_prints_the_summary_and_exits_128_plus_it(spawn, tmp_path, sig):
    name = f"sig-run-{sig.name.lower()}"
    run, _ = _start_run(spawn, tmp_path, name)
    started = _descendants(run)
    _killpg(run, sig)
    why = "stopped by SIGINT \\(Ctrl-C\\)" if sig == signal.SIGINT else f"stopped by {sig.name}"
    _assert_stopped(run, name, 128 + sig, why, started)
    assert len(re.findall(r"  worker:\d +\S+ +TASK_KILLED +restarts 0 exit 143 \(killed by SIGTERM\)$", run.output, re.M)) == 2


def test_ctrl_c_while_tfmesos_run_starts_exits_130_without_a_traceback(spawn, tmp_path):
    """From tfmesos' first line on (Python imports tfmesos for about a second), whenever it lands."""
    name = "sig-run-early"
    run = spawn([PYTHON, "-X", "importtime"] + TFMESOS[1:] + ["run", str(_options(tmp_path, name, "sleep 300")),
                                                            "--api-port", "0"])
    run.wait_for(r"^import time: .*\| +tfmesos\.errors$", 60)  # imported by tfmesos.client.cli after its first line
    _killpg(run, signal.SIGINT)
    assert run.wait(120) == 130, run.output[-3000:]
    said = "\n".join(line for line in run.lines if not line.startswith("import time:"))
    assert re.search(r"interrupted|stopped by SIGINT", said), said[-3000:]
    _assert_honest(said)
    assert "KeyboardInterrupt" not in said
    assert not wait_gone(name, timeout=30)


@pytest.mark.serial("its second Ctrl-C must land within the executors' 3 s kill grace after the first")
def test_a_second_ctrl_c_says_what_the_stop_waits_for_and_the_stop_goes_on(spawn, tmp_path):
    name = "sig-run-twice"
    run, _ = _start_run(spawn, tmp_path, name, STUBBORN)
    started = _descendants(run)
    _killpg(run, signal.SIGINT)
    run.wait_for(r"stopped by SIGINT \(Ctrl-C\)$", 30)
    _killpg(run, signal.SIGINT)
    said = run.wait_for(r"SIGINT again: still stopping, waiting for (.*); a third signal gives up at once", 30)
    assert re.fullmatch(r"2 task\(s\) to end: worker:0 TASK_\w+, worker:1 TASK_\w+", said.group(1)), said.group(0)
    _assert_stopped(run, name, 130, r"stopped by SIGINT \(Ctrl-C\)", started)
    assert run.output.count("TASK_KILLED    restarts 0 exit 137 (killed by SIGKILL)") == 2, "killed after the grace period"


@pytest.mark.serial("its second Ctrl-C must land within the executors' 3 s kill grace after the first")
def test_a_third_ctrl_c_gives_up_at_once_and_still_leaves_no_process(spawn, tmp_path):
    name, state = "sig-run-thrice", tmp_path / "state"
    run, _ = _start_run(spawn, tmp_path, name, STUBBORN, "--state-dir", str(state))
    started = _descendants(run)
    sandboxes = run.wait_for(r"sandboxes under (\S+)", 5).group(1)
    for said in (r"stopped by SIGINT", r"SIGINT again: still stopping"):
        _killpg(run, signal.SIGINT)
        run.wait_for(said, 30)
    _killpg(run, signal.SIGINT)
    assert run.wait(10) == 130, run.output[-3000:]  # at once: the tasks' grace period is not waited for
    assert re.search(r"gave up at the third signal: killed \d+ process\(es\) this run started$", run.output, re.M)
    assert "job sig-run-thrice" not in run.output, "no summary: it gave up"
    _assert_honest(run.output)
    _assert_nothing_left(run, name, started)
    assert not os.path.exists(sandboxes), "the embedded master's directory goes with it"
    # Its record is kept as it stood, and no live marker stays to make `status NAME` show a gone run.
    assert not list((state / "live").iterdir()), "the live marker was withdrawn"
    assert _tfmesos("status", name, "--state-dir", str(state)).startswith(
        f"job {name}  KILLED: stopped by SIGINT (Ctrl-C)")


def _tfmesos(*args: str) -> str:
    done = subprocess.run(TFMESOS + list(args), env=ENV, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_tfmesos_kill_ends_the_job_killed_with_its_own_exit_code_and_every_reader_agrees(spawn, tmp_path):
    name, state = "sig-run-kill", str(tmp_path / "state")
    run, api = _start_run(spawn, tmp_path, name, "sleep 300", "--state-dir", state, "--keep-serving", "60")
    started = _descendants(run)
    _tfmesos("kill", "--api", api, "--state-dir", state)
    run.wait_for(r"job over; its status page stays on", 60)
    snap = _status(api)  # the ended job, served on (--keep-serving)
    assert (snap["phase"], snap["cause"]) == ("KILLED", "stopped on request (POST /v1/shutdown)")
    assert not any("fail" in e.lower() for e in snap["events"]), snap["events"]
    with urllib.request.urlopen(f"http://{api}/metrics", timeout=5) as resp:
        phases = dict(re.findall(r'^tfmesos_job_phase\{phase="(\w+)"\} (\S+)$', resp.read().decode(), re.M))
    assert {p for p, v in phases.items() if float(v)} == {"KILLED"}, phases
    _tfmesos("kill", "--api", api, "--state-dir", state)  # ends the serving; the exit code is still the job's
    _assert_stopped(run, name, 5, r"stopped on request \(POST /v1/shutdown\)", started)
    listed = _tfmesos("jobs", "--state-dir", state)  # from the kept record
    assert re.search(rf"^{name} +KILLED ", listed, re.M) and "fail" not in listed.lower(), listed
    assert _tfmesos("status", name, "--state-dir", state).startswith(f"job {name}  KILLED: stopped on request")


def _start_cluster_script(spawn, mode: str) -> tuple[LineProcess, str]:
    run = spawn([PYTHON, str(ROOT / "tests" / "e2e" / "signal_cluster.py"), mode])
    run.wait_for(r"^READY ", 180)
    return run, f"cluster-{run.proc.pid}-0"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_stop_signal_to_a_cluster_script_closes_the_cluster_with_a_summary(spawn, sig):
    run, service = _start_cluster_script(spawn, "wait")
    started = _descendants(run)
    assert any("local-master" in p.cmdline() for p in started), "the embedded master is a child of the script"
    _killpg(run, sig)
    _assert_stopped(run, service, 128 + sig, f"stopped by {sig.name}.*", started)
    assert "LEFT" not in run.output, "the block was left by the signal"


def test_a_cluster_block_left_normally_says_closed_and_nothing_failed(spawn):
    run, service = _start_cluster_script(spawn, "close")
    assert run.wait(120) == 0, run.output[-3000:]
    assert re.search(r"\] cluster closed$", run.output, re.M) and "LEFT cause=cluster closed" in run.output
    _assert_honest(run.output)
    assert not wait_gone(service, timeout=30)


@pytest.mark.serial("its second Ctrl-C must land within the executors' 3 s kill grace after the first")
def test_a_second_and_third_ctrl_c_to_a_cluster_script_say_and_give_up(spawn):
    run, service = _start_cluster_script(spawn, "stubborn")
    started = _descendants(run)
    _killpg(run, signal.SIGINT)
    run.wait_for(r"stopped by SIGINT", 30)
    _killpg(run, signal.SIGINT)
    run.wait_for(r"SIGINT again: still stopping, waiting for 2 task\(s\) to end: worker:0", 30)
    _killpg(run, signal.SIGINT)
    assert run.wait(10) == 130, run.output[-3000:]
    assert "gave up at the third signal" in run.output
    _assert_honest(run.output)
    _assert_nothing_left(run, service, started)


@pytest.mark.serial("its Ctrl-C must land inside the close, within the tasks' 3 s kill grace")
def test_ctrl_c_while_a_cluster_block_closes_lets_the_close_finish_then_exits_130(spawn):
    """The block was left normally and the close waits for tasks that ignore SIGTERM: a Ctrl-C then
    does not cut the close short (teardown, kept record and summary were skipped before)."""
    run, service = _start_cluster_script(spawn, "stubborn-close")
    started = _descendants(run)
    run.wait_for(r"^CLOSING$", 30)
    # The close has begun once its kills reach the tasks (TASK_KILLING): a Ctrl-C right after the
    # script's CLOSING could still land in the block, before the close (a stop, not a close, then).
    run.wait_for(r"worker:\d TASK_KILLING", 30)
    _killpg(run, signal.SIGINT)
    assert run.wait(120) == 130, run.output[-3000:]
    assert re.search(rf"job {service} CLOSED: cluster closed$", run.output, re.M), run.output[-3000:]
    assert "LEFT" not in run.output, "the script exits 130 after the close, as after a Ctrl-C in the block"
    _assert_honest(run.output)
    _assert_nothing_left(run, service, started)


def test_ctrl_c_to_tfrun_stops_worker_0_and_every_task(spawn):
    name = "sig-tfrun"
    run = spawn([PYTHON, "-m", "tfmesos.client.tfrun", "-v", "-w", "2", "-s", "1", "-n", name,
                 "-Cw", "0.2", "-Cs", "0.2", "-Mw", "128", "-Ms", "128", "--", "sleep", "300"])
    run.wait_for(r"ps:0 TASK_RUNNING", 180)
    run.wait_for(r"worker:1 TASK_RUNNING", 60)

    def worker_0() -> list[psutil.Process]:  # here, as a child of tfrun (a shell running the command)
        return [p for p in psutil.Process(run.proc.pid).children() if p.environ().get("TFMESOS_TASK_INDEX") == "0"]

    assert len(eventually(worker_0, 60, "worker 0 started here")) == 1
    started = _descendants(run)
    _killpg(run, signal.SIGINT)
    _assert_stopped(run, name, 130, r"stopped by SIGINT \(Ctrl-C\)", started)


def test_on_a_master_of_its_own_sigterm_under_marathon_leaves_the_job_and_ctrl_c_then_stops_it(spawn, tmp_path):
    """Under Marathon SIGTERM is a restart (today's behaviour): the tasks keep running for the next
    instance, which resumes the job; Ctrl-C to that one stops it like anywhere else."""
    master = LocalMaster(tmp_path / "master")
    try:
        name, state = "sig-run-marathon", str(tmp_path / "state")
        options = str(_options(tmp_path, name, "sleep 300"))
        argv = TFMESOS + ["run", options, "--master", master.address, "--api-port", "0", "--state-dir", state]
        first = spawn(["env", "MARATHON_APP_ID=/sig-run-marathon"] + argv)
        for index in (0, 1):
            first.wait_for(rf"worker:{index} TASK_RUNNING", 120)
        _killpg(first, signal.SIGTERM)
        assert first.wait(60) == 143, first.output[-3000:]
        assert "KILLED" not in first.output and len(task_processes(name)) == 4, "executors and tasks go on"
        second = spawn(argv)
        second.wait_for(rf"resuming job '{name}'", 60)
        second.wait_for(r"re-registered|registered as framework", 60)
        started = task_processes(name)
        _killpg(second, signal.SIGINT)
        _assert_stopped(second, name, 130, r"stopped by SIGINT \(Ctrl-C\)", started)
    finally:
        master.stop()
