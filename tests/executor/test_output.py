"""Where a task's output goes: straight into the sandbox files when the executor's stdout and
stderr are files (no pump threads), through pumps when they are pipes (a container logger) or
when the output is forwarded; the log tail sent with the task's end is right either way."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# A task writing to both streams, run by TaskProcess inside an executor-like process whose own
# stdout and stderr are what the test gives it. It prints what it found as JSON on fd 3.
_PROBE = r"""
import json, os
from tfmesos.executor.executor import TaskProcess
task = "for i in $(seq 1 30); do echo out$i; done; echo err1 >&2; echo err2 >&2; exit 3"
p = TaskProcess(["/bin/sh", "-c", task], dict(os.environ), os.getcwd(), None)
threads = len(p._pumps)
code = p.wait()
os.write(int(os.environ["REPORT_FD"]), json.dumps({"code": code, "tail": p.log_tail(), "pump_threads": threads}).encode())
"""


def _run(tmp_path: Path, stdout: object, stderr: object, probe: str = _PROBE, **env_vars: str) -> dict:
    read, write = os.pipe()
    env = {"PYTHONPATH": str(Path(__file__).parents[2]), "PATH": "/usr/bin:/bin", "REPORT_FD": str(write),
           **env_vars}
    proc = subprocess.Popen([sys.executable, "-c", probe], stdout=stdout, stderr=stderr, pass_fds=(write,),
                            cwd=tmp_path, env=env)
    os.close(write)
    out, err = proc.communicate(timeout=60)
    with open(read, "rb") as f:
        found = json.loads(f.read() or b"{}")
    assert proc.returncode == 0, (out, err)
    return {**found, "stdout": out, "stderr": err}


def test_with_sandbox_files_the_task_writes_them_itself_and_the_tail_is_read_back(tmp_path: Path) -> None:
    with open(tmp_path / "stdout", "ab") as out, open(tmp_path / "stderr", "ab") as err:
        found = _run(tmp_path, out, err)
    assert found["pump_threads"] == 0
    assert found["code"] == 3
    lines = found["tail"].splitlines()
    assert len(lines) == 20 and lines[-2:] == ["err1", "err2"] and lines[:18] == [f"out{i}" for i in range(13, 31)]
    assert (tmp_path / "stdout").read_text().splitlines() == [f"out{i}" for i in range(1, 31)]
    assert (tmp_path / "stderr").read_text().splitlines() == ["err1", "err2"]


def test_with_pipes_the_output_is_pumped_and_the_tail_kept_as_it_arrives(tmp_path: Path) -> None:
    found = _run(tmp_path, subprocess.PIPE, subprocess.PIPE)
    assert found["pump_threads"] == 2
    assert found["code"] == 3
    assert found["stdout"].decode().splitlines() == [f"out{i}" for i in range(1, 31)]
    assert found["stderr"].decode().splitlines() == ["err1", "err2"]
    lines = found["tail"].splitlines()  # the last 20 in arrival order (the two pumps race)
    assert len(lines) == 20 and "out30" in lines
    assert set(lines) <= {f"out{i}" for i in range(1, 31)} | {"err1", "err2"}


# A Python task that fails as Keras did under MultiWorkerMirroredStrategy: an exception whose
# message is a long tensor dump, and noise at shutdown after its traceback.
_FAILING_TASK = r"""
import sys
class Held:
    def __del__(self):
        raise RuntimeError("iterator closed twice")
held = Held()
dump = "\n".join(f"  {i}: <tf.Tensor: shape=(32, 10), dtype=float32>" for i in range(400))
raise ValueError("Attempt to convert a value (PerReplica:{\n" + dump + "\n}) with an unsupported type")
"""
_EXCEPTION_PROBE = r"""
import json, os, sys
from tfmesos.executor.executor import TaskProcess
print("executor: starting the task", file=sys.stderr, flush=True)  # before it: not the task's
p = TaskProcess([sys.executable, "-c", os.environ["TASK"]], dict(os.environ), os.getcwd(), None)
code = p.wait()
os.write(int(os.environ["REPORT_FD"]), json.dumps({"code": code, "tail": p.log_tail(), "exception": p.exception()}).encode())
"""


@pytest.mark.parametrize("streams", ["files", "pipes"])
def test_the_exception_line_is_found_in_either_way_of_writing_output(tmp_path: Path, streams: str) -> None:
    if streams == "files":
        with open(tmp_path / "stdout", "ab") as out, open(tmp_path / "stderr", "ab") as err:
            found = _run(tmp_path, out, err, _EXCEPTION_PROBE, TASK=_FAILING_TASK)
    else:
        found = _run(tmp_path, subprocess.PIPE, subprocess.PIPE, _EXCEPTION_PROBE, TASK=_FAILING_TASK)
    assert found["code"] == 1
    assert "PerReplica" not in found["tail"], "the tail alone would not say why"
    assert found["exception"] == "ValueError: Attempt to convert a value (PerReplica:{"


@pytest.mark.parametrize("command, argv", [
    ("exec sleep 3", ["sleep", "3"]),
    ("  python train.py --steps=100 --lr 0.1 ", ["python", "train.py", "--steps=100", "--lr", "0.1"]),
    ("cd /tmp", None),  # a builtin
    ("FOO=1 python x.py", None),  # an assignment
    ("echo $HOME", None), ("a && b", None), ("python -c 'print(1)'", None), ("ls *.py", None),
    ("first\nsecond", None), ("x > y", None), ("~/bin/run", None), ("exec", None),
])
def test_plain_commands_skip_the_shell_and_anything_else_goes_through_it(command: str, argv: list[str] | None) -> None:
    from tfmesos.executor.executor import command_argv

    assert command_argv(command) == (argv or ["/bin/sh", "-c", command])


def test_a_plain_command_that_is_not_found_fails_as_the_shell_reports_it(tmp_path: Path, monkeypatch) -> None:
    """The direct exec falls back to sh -c: exit 127 and the shell's message, as before."""
    from tfmesos.executor.executor import TFExecutor
    from tfmesos.mesos import messages as m

    class Driver:
        def __init__(self) -> None:
            self.updates: list[dict] = []

        def sendStatusUpdate(self, status: dict) -> None:  # noqa: N802 (pymesos API)
            self.updates.append(status)

        def sendFrameworkMessage(self, data: str) -> None:  # noqa: N802 (pymesos API): the executor asks
            pass

    monkeypatch.setenv("MESOS_SANDBOX", str(tmp_path))
    driver, executor = Driver(), TFExecutor()
    payload = m.TaskPayload(role="worker", index=0, port=0, restarts=0, command="no-such-program-tfm --flag",
                            env={}, workdir="", checkpoint_dir="", python=sys.executable, service="digits",
                            stream_output=True)
    executor.launchTask(driver, {"task_id": {"value": "digits.worker.0.1"}, "data": m.encode(payload)})
    executor.frameworkMessage(driver, m.encode(m.ClusterSpecMessage.of(1, {"worker": ["127.0.0.1:1"]})))
    assert executor.finished.wait(30)
    end = driver.updates[-1]
    result = m.decode(end["data"])
    assert end["state"] == "TASK_FAILED" and result.exit_code == 127
    assert "no-such-program-tfm" in result.log_tail and "not found" in result.log_tail


_ORPHAN_PROBE = r"""
import os, sys
import tfmesos.executor.executor as ex
if sys.argv[1] == "preexec":
    ex._pdeathsig_shim = lambda: None  # no setpriv: a preexec_fn sets the parent-death signal
p = ex.TaskProcess(["sleep", "60"], dict(os.environ), os.getcwd(), None)
print(p.proc.pid, flush=True)
sys.stdin.read()  # until killed
"""


def test_the_shim_runs_nothing_once_its_executor_is_gone(tmp_path: Path) -> None:
    """setpriv sets the parent-death signal only after Popen has returned, for whoever is the
    parent by then: a task whose executor died first must not start. Here the shim names this
    process as its executor but a child runs it, as if this one had died before setpriv ran."""
    import tfmesos.executor.executor as ex

    shim = ex._pdeathsig_shim()
    assert shim is not None, "setpriv (Debian's util-linux) is missing: the test needs it, install it"
    ran = tmp_path / "ran"
    started = subprocess.run([sys.executable, "-c", "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))",
                              *shim, "touch", str(ran)], timeout=30)
    assert started.returncode != 0 and not ran.exists()
    direct = subprocess.run([*shim, "touch", str(ran)], timeout=30)  # its executor is this process: it runs
    assert direct.returncode == 0 and ran.exists()


@pytest.mark.parametrize("how", ["shim", "preexec"])
def test_a_task_dies_with_its_executor_killed_by_sigkill(tmp_path: Path, how: str) -> None:
    """The task runs in its own process group; if the executor is killed -9 it must not linger
    (PR_SET_PDEATHSIG, through setpriv where there is one, else a preexec_fn)."""
    import signal

    import psutil

    env = {"PYTHONPATH": str(Path(__file__).parents[2]), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    executor = subprocess.Popen([sys.executable, "-c", _ORPHAN_PROBE, how], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, cwd=tmp_path, env=env, text=True)
    assert executor.stdout is not None
    task = psutil.Process(int(executor.stdout.readline()))
    assert task.ppid() == executor.pid  # its one child (its cmdline reads empty while setpriv execs)
    executor.send_signal(signal.SIGKILL)
    executor.wait(10)
    task.wait(timeout=10)  # psutil.TimeoutExpired if it outlived its executor


# The task of an executor-like process that holds an inheritable descriptor (as one an agent left
# open), started as real agents' tasks are (sandbox files, the sandbox as its cwd), then started
# in another directory: what each found, as JSON on fd 3.
_SPAWN_PROBE = r"""
import json, os, sys
from tfmesos.executor.executor import SpawnedTask, TaskProcess
kept = os.open(os.devnull, os.O_RDONLY)
os.set_inheritable(kept, True)
task = ("echo \"$(readlink /proc/self/fd/0) $(ps -o pgid= -p $$) $$ $(grep SigIgn /proc/self/status)\"; "
        f"ls /proc/self/fd/{kept} 2>/dev/null || echo closed")
here = TaskProcess(["/bin/sh", "-c", task], dict(os.environ), os.getcwd(), None)
codes = [here.wait()]
os.mkdir("elsewhere")
there = TaskProcess(["/bin/sh", "-c", "pwd; " + task], dict(os.environ), "elsewhere", None)
codes.append(there.wait())
try:
    codes.append(TaskProcess(["/no/such/program"], dict(os.environ), os.getcwd(), None).wait())
    missing = ""
except OSError as exc:
    missing = type(exc).__name__
os.write(int(os.environ["REPORT_FD"]), json.dumps({"spawned": [type(p.proc).__name__ for p in (here, there)],
                                                   "codes": codes, "missing": missing}).encode())
"""


def test_a_task_in_the_sandbox_is_spawned_as_popen_would_start_it(tmp_path: Path) -> None:
    """The usual task (it writes the sandbox files, runs in the sandbox) starts with os.posix_spawn,
    no subprocess import: stdin from /dev/null, a process group of its own, no signal ignored (Python
    ignores SIGPIPE and SIGXFSZ; glibc's own two aside), none of the executor's descriptors, as under
    Popen; a task with a workdir still starts through Popen, in that directory."""
    with open(tmp_path / "stdout", "ab") as out, open(tmp_path / "stderr", "ab") as err:
        found = _run(tmp_path, out, err, probe=_SPAWN_PROBE)
    assert found["spawned"] == ["SpawnedTask", "Popen"] and found["codes"] == [0, 0, 127]
    lines = (tmp_path / "stdout").read_text().splitlines()
    assert len(lines) == 5 and lines[2] == str(tmp_path / "elsewhere"), lines
    spawned, popen = lines[0].split(maxsplit=3), lines[3].split(maxsplit=3)
    for devnull, pgid, pid, _ in (spawned, popen):
        assert devnull == "/dev/null" and pgid == pid, lines
    ignored = [int(found[3].split()[1], 16) for found in (spawned, popen)]
    assert not ignored[0] & (1 << 12 | 1 << 24), f"SIGPIPE or SIGXFSZ ignored: {lines[0]}"
    glibc_own = 1 << 31 | 1 << 32  # signals 32 and 33 (see SpawnedTask)
    assert ignored[0] & ~glibc_own == ignored[1] & ~glibc_own, "the same signals ignored as under Popen (glibc's aside: a parent may have them ignored too)"
    assert lines[1] == lines[4] == "closed", "the executor's inheritable descriptor reached the task"
    assert found["missing"] == "", "the shim's shell reports a missing program, as it did under Popen"
