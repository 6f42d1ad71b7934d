"""Nothing of a job is left within 5 s of its run's end, whatever the end (issue 39, item 2): success,
failure, ``tfmesos kill``, Ctrl-C once, twice and three times, SIGTERM, and SIGKILL of ``tfmesos
run`` (as the OOM killer sends it), each in each phase of the job: placing (the launch under way),
training, evaluating (the task's Python catches SIGTERM and goes on, as TensorFlow's does after
``model.fit``: only SIGKILL after the grace period ends it) and ending (worker 0 has finished, the job
succeeded, and worker 1, catching SIGTERM, is being killed).

Real processes on the embedded master: ``tfmesos run`` with two workers, each running
``phased_task.py`` under ``sh -c`` (so the Python is the shell's child, and is left to init when
the shell dies first), with a child of its own. What counts as the job's: every process whose
environment names the job (``TFMESOS_SERVICE``, the executor id) or one of the run's sandboxes
(``MESOS_DIRECTORY`` under the embedded master's work dir), and every process the run had started
(zygote, executors, tasks), all found before the end and looked for again after it.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.e2e.harness import ROOT, TFMESOS, LineProcess, eventually, this_runs

PYTHON = sys.executable
ENV = dict(os.environ, PYTHONPATH=str(ROOT), PATH=f"{os.path.dirname(PYTHON)}:{os.environ.get('PATH', '')}")
TASK = ROOT / "tests" / "e2e" / "phased_task.py"
LEFT_WITHIN = 5.0  # seconds after the run's end (or its SIGKILL) by which nothing of the job runs

# The workers' behaviours (phased_task.py) in each phase, and what the test waits for before the end.
PHASES = {
    "placing": ("train", "train"),
    "training": ("train", "train"),
    "evaluating": ("evaluate", "evaluate"),
    "ending": ("finish", "evaluate"),
}
STOPS = ["kill", "ctrl-c", "ctrl-c-twice", "ctrl-c-thrice", "sigterm", "sigkill"]
EXIT = {"kill": 5, "ctrl-c": 130, "ctrl-c-twice": 130, "ctrl-c-thrice": 130, "sigterm": 143, "sigkill": -9}


def _processes_of(name: str, sandboxes: str) -> list[psutil.Process]:
    """Every process whose environment names the job or one of the run's sandboxes (by name, of
    this test run only: another checkout's suite may run the same job on this machine)."""
    found = []
    for p in psutil.process_iter():
        try:
            env = p.environ()
        except (psutil.Error, OSError):
            continue
        named = env.get("TFMESOS_SERVICE") == name or env.get("MESOS_EXECUTOR_ID", "").startswith(name + ".")
        if (named and this_runs(env)) or env.get("MESOS_DIRECTORY", "").startswith(sandboxes):
            found.append(p)
    return found


def _alive(processes: list[psutil.Process]) -> list[psutil.Process]:
    out = []
    for p in processes:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.Error:
            pass
    return out


class Run:
    """One ``tfmesos run`` of the two phased workers; ``end`` is when it ended (or was SIGKILLed)."""

    def __init__(self, tmp_path: Path, name: str, behaviours: tuple[str, str], master: str | None = None,
                 sandboxes: str = "", service: dict | None = None):
        """On the embedded master, or on ``master`` (whose agents' sandboxes are under ``sandboxes``)."""
        self.name, self.folder, self.state = name, tmp_path / "said", str(tmp_path / "state")
        self.folder.mkdir()
        options = tmp_path / "options.json"
        options.write_text(json.dumps({
            "service": {"name": name, **(service or {})},
            "job": {"command": f"$TFMESOS_PYTHON {TASK} {self.folder} {' '.join(behaviours)}; code=$?; echo after; "
                               "exit $code"},
            "roles": {"worker": {"count": 2, "cpus": 0.2, "mem": 128, "restart_policy": "Never"}}}))
        self.proc = LineProcess(["env", "--default-signal=HUP,INT"] + TFMESOS
                                + ["run", str(options), "--api-port", "0", "--state-dir", self.state]
                                + (["--master", master] if master else []), env=ENV)
        self.sandboxes = sandboxes or self.proc.wait_for(r"sandboxes under (\S+)", 120).group(1)
        self.api = self.proc.wait_for(r"scheduler API on http://(\S+)/v1/status", 60).group(1)
        self.end = 0.0
        self.known: list[psutil.Process] = []

    def said(self, what: str, index: int) -> bool:
        return (self.folder / f"{what}-{index}").exists()

    def remember(self) -> None:
        """What of the job runs now (and whatever the run started): looked for again after the end."""
        try:
            started = psutil.Process(self.proc.proc.pid).children(recursive=True)
        except psutil.Error:
            started = []
        self.known += started + _processes_of(self.name, self.sandboxes)

    def signal(self, sig: int) -> bool:
        """``sig`` to the run's process group, as a terminal sends Ctrl-C; False once it has ended."""
        try:
            os.killpg(self.proc.proc.pid, sig)
            return True
        except ProcessLookupError:
            return False

    def wait(self, timeout: float = 120) -> int:
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the run did not end in {timeout:g} s:\n" + self.proc.output[-3000:]) from None
        self.end = self.end or time.monotonic()
        return code

    def left(self) -> list[psutil.Process]:
        """What of the job still runs LEFT_WITHIN seconds after the end."""
        left = max(0.0, self.end + LEFT_WITHIN - time.monotonic())
        psutil.wait_procs(_alive(self.known), timeout=left)
        return _alive(self.known) + _alive(_processes_of(self.name, self.sandboxes))

    def cleanup(self) -> None:
        if self.proc.proc.poll() is None:
            self.proc.killpg(signal.SIGKILL)
        for p in _alive(self.known + _processes_of(self.name, self.sandboxes)):
            try:
                p.kill()
            except psutil.Error:
                pass


@pytest.fixture
def runs():
    made: list[Run] = []

    def start(tmp_path: Path, name: str, behaviours: tuple[str, str], **where: object) -> Run:
        made.append(Run(tmp_path, name, behaviours, **where))  # type: ignore[arg-type]
        return made[-1]

    yield start
    for run in made:
        run.cleanup()


def _reach(run: Run, phase: str) -> None:
    """Until the job is in ``phase``."""
    if phase == "placing":
        run.proc.wait_for(r"launch worker:1 as ", 120)
        return
    if phase == "ending":
        # Worker 0's TASK_FINISHED that ends the job is told as the job's end (core/state/notices.py).
        run.proc.wait_for(r"worker:0 TASK_FINISHED|SUCCEEDED: worker:0 finished", 120)
        return
    what = "training" if phase == "training" else "evaluating"
    eventually(lambda: run.said(what, 0) and run.said(what, 1), 120, f"both workers {what}")


def _stop(run: Run, how: str) -> None:
    run.remember()
    if how == "sigkill":
        run.proc.kill(signal.SIGKILL)  # the tfmesos run process alone, as the OOM killer does
        run.end = time.monotonic()
    elif how == "kill":
        done = subprocess.run(TFMESOS + ["kill", "--api", run.api, "--state-dir", run.state], env=ENV,
                              capture_output=True, text=True, timeout=60)
        # In its ending the job may be over, its API gone, before the command is up (exit 3).
        assert done.returncode == 0 or (done.returncode == 3 and f"job {run.name} SUCCEEDED" in run.proc.output), \
            done.stderr
    elif how == "sigterm":
        run.signal(signal.SIGTERM)
    else:
        signals = {"ctrl-c": 1, "ctrl-c-twice": 2, "ctrl-c-thrice": 3}[how]
        for said in [r"stopped by SIGINT", r"SIGINT again: still stopping", None][:signals]:
            if not run.signal(signal.SIGINT):
                break  # it ended before the next one: what is looked at is what it left
            if said is not None and signals > 1:
                try:  # a job that has ended already (its ending) says nothing of a stop: go on
                    run.proc.wait_for(said, 2)
                except AssertionError:
                    pass


@pytest.mark.parametrize("phase", list(PHASES))
@pytest.mark.parametrize("how", STOPS)
def test_nothing_of_the_job_is_left_5_s_after_a_stop(runs, tmp_path, how, phase):
    run = runs(tmp_path, f"left-{how}-{phase}", PHASES[phase])
    _reach(run, phase)
    _stop(run, how)
    code = run.wait()
    # The job had succeeded (worker 0 finished) before a stop in its ending: exit 0, unless given up on
    # (a third Ctrl-C that came before the run's end).
    assert code == EXIT[how] or (phase == "ending" and code == 0 and how != "sigkill"), \
        f"exit {code}:\n" + run.proc.output[-3000:]
    left = run.left()
    assert not left, f"left {LEFT_WITHIN:g} s after the end: {[(p.pid, p.cmdline()) for p in left]}\n" \
                     + run.proc.output[-3000:]


@pytest.mark.parametrize("phase", ["training", "evaluating"])
@pytest.mark.parametrize("end", ["success", "failure"])
def test_nothing_of_the_job_is_left_5_s_after_it_ends_by_itself(runs, tmp_path, end, phase):
    """The other worker still runs when the job's end is decided (and catches SIGTERM while evaluating)."""
    other = "train" if phase == "training" else "evaluate"
    behaviours = ("finish", other) if end == "success" else (other, "fail")
    run = runs(tmp_path, f"left-{end}-{phase}", behaviours)
    eventually(lambda: run.said("finishing" if end == "success" else "failing", 0 if end == "success" else 1), 120,
               "the end decided")
    run.remember()
    code = run.wait()
    assert code == (0 if end == "success" else 1), run.proc.output[-3000:]
    left = run.left()
    assert not left, f"left {LEFT_WITHIN:g} s after the end: {[(p.pid, p.cmdline()) for p in left]}\n" \
                     + run.proc.output[-3000:]


@pytest.mark.parametrize("work_dir", ["none", "no-recovery"])
def test_executors_of_a_local_master_that_no_restart_can_recover_end_within_5_s_of_its_sigkill(tmp_path, work_dir):
    """``tfmesos local-master`` without ``--work-dir`` (a temporary one, removed at its end), or with
    ``--no-recovery`` (as ``tfmesos.cluster()`` starts it), killed -9: its executors end their tasks
    at once instead of waiting MESOS_RECOVERY_TIMEOUT (15 minutes) for agents that cannot come back.
    With a work dir to recover from, they wait, as Mesos' do: tests/e2e/test_recovery.py's agent
    scenarios restart such a master and find them again."""
    extra = [] if work_dir == "none" else ["--work-dir", str(tmp_path / "work"), "--no-recovery"]
    master = LineProcess(TFMESOS + ["local-master", "--port", "0", "--agents", "2", "--first-port", "0",
                                    "--ports-per-agent", "100", *extra], env=ENV)
    run = None
    name = f"left-local-master-{work_dir}"
    try:
        address = master.wait_for(r"listening on (\S+)", 60).group(1)
        sandboxes = master.wait_for(r"work dir \(sandboxes\): (\S+)", 10).group(1)
        folder = tmp_path / "said"
        folder.mkdir()
        options = tmp_path / "options.json"
        options.write_text(json.dumps({
            "service": {"name": name},
            "job": {"command": f"$TFMESOS_PYTHON {TASK} {folder} evaluate evaluate; code=$?; exit $code"},
            "roles": {"worker": {"count": 2, "cpus": 0.2, "mem": 128}}}))
        run = LineProcess(TFMESOS + ["run", str(options), "--master", address, "--api-port", "0",
                                     "--state-dir", str(tmp_path / "state")], env=ENV)
        eventually(lambda: (folder / "evaluating-0").exists() and (folder / "evaluating-1").exists(), 120,
                   "both workers evaluating")
        known = _processes_of(name, sandboxes)
        assert len([p for p in known if "tfmesos.executor" in p.cmdline()]) == 2, known
        master.kill(signal.SIGKILL)
        killed = time.monotonic()
        psutil.wait_procs(known, timeout=LEFT_WITHIN)
        left = _alive(known) + _alive(_processes_of(name, sandboxes))
        assert not left, f"left {time.monotonic() - killed:.1f} s after: {[(p.pid, p.cmdline()) for p in left]}"
    finally:
        for proc in (run, master):
            if proc is not None and proc.proc.poll() is None:
                proc.killpg(signal.SIGKILL)
        for p in _alive(_processes_of(name, "/nonexistent")):
            p.kill()
