"""A cold executor's start: the CPU of ``python -m tfmesos.executor`` exec'd as a real Mesos agent
starts it (no fork server), to its SUBSCRIBE and to its TASK_RUNNING.

A stand-in agent (the executor driver tests' ``ScriptedAgent``: a socket in this process, the v1
executor API's SUBSCRIBE and calls, nothing else) gets the executor's SUBSCRIBE. In the ``subscribe`` mode it kills the executor
(SIGKILL) the moment the request has arrived, so the executor's ``wait4`` rusage (user + sys,
which the kernel scales to the exact run time) is its CPU from exec to SUBSCRIBE sent. In the
``running`` mode it answers SUBSCRIBED and a LAUNCH of a task (``exec sleep 30``, the payload built
by the scheduler's own ``task_payload``, carrying the ClusterSpec as a gang of up to 128 addresses'
does), and kills the executor when its TASK_RUNNING arrives: the CPU of a whole task start, without
the task's own; the executor's USS is read just before (its imports done, its task started). The executor's environment is the embedded agent's (``executor_environment``), its
stdout and stderr are sandbox files. ``python -c pass`` is measured the same way: the floor.
``floor_executor.py`` (real_gang's floor arm: ``python -S -I``, no tfmesos) is measured as the
``running`` mode measures ours.

``compare`` interleaves the samples of several trees (``PYTHONPATH`` alternating: before/after
figures) and of interpreters (a venv with this checkout's editable install, whose ``site`` imports
the editable finder's ``pathlib``, ``urllib.parse``, ``ipaddress``: ~10 ms of every process; a plain
venv, as the image's ``pip install``).
"""
from __future__ import annotations

import base64
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from benchmarks.common import PYTHON, log, record, summary
from localmesos.agent.sandbox import executor_environment
from tfmesos.core.actions import TaskLaunch
from tfmesos.core.spec import JobSpec, Resources, RoleSpec, ServiceSpec, TaskKey
from tfmesos.core.tensorflow.profile import TENSORFLOW
from tfmesos.mesos.messages import ClusterSpecMessage, encode
from tfmesos.mesos.taskinfo import task_payload
from tests.mesos.test_executor_driver import ScriptedAgent

FRAMEWORK, EXECUTOR, TASK = "bench-fw-0000", "bench.worker.0.1", "bench.worker.0.1"
FLOOR_EXECUTOR = Path(__file__).with_name("floor_executor.py")
_SANDBOXES = itertools.count()
# The executor started without ``-m`` (no runpy, importlib.util, contextlib): what the ExecutorInfo's
# command would cost as a direct script (the embedded agent's fork server recognises the -m form).
DIRECT = ("-c", "import sys; from tfmesos.executor.executor import main; sys.exit(main())")


def _subscribed() -> dict[str, Any]:
    return {"type": "SUBSCRIBED", "subscribed": {
        "executor_info": {"executor_id": {"value": EXECUTOR}, "framework_id": {"value": FRAMEWORK},
                          "command": {"value": f"{PYTHON} -m tfmesos.executor"}},
        "framework_info": {"id": {"value": FRAMEWORK}, "user": "", "name": "bench", "checkpoint": True},
        "agent_info": {"id": {"value": "bench-S0"}, "hostname": "127.0.0.1"}}}


def _running(agent: ScriptedAgent) -> bool:
    return any(c["type"] == "UPDATE" and c["update"]["status"]["state"] == "TASK_RUNNING" for c in agent.calls)


def _task_data(port: int, python: str) -> str:
    key = TaskKey("worker", 0)
    spec = JobSpec(service=ServiceSpec(name="bench"),
                   roles=(RoleSpec("worker", 1, Resources(cpus=0.1, mem=32), "exec sleep 30"),), streamed=(),
                   profile=TENSORFLOW)
    launch = TaskLaunch(key, TASK, port, Resources(cpus=0.1, mem=32), 0)
    return encode(task_payload(spec, launch, python, cluster_spec=ClusterSpecMessage.of(1, {"worker": [f"127.0.0.1:{port}"]})))


def _cpu_of_killed(proc: subprocess.Popen) -> float:
    """SIGKILL, reap: user + sys of the process (its threads included, its unreaped task not)."""
    try:
        proc.send_signal(signal.SIGKILL)
    except ProcessLookupError:
        pass
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = -9
    return usage.ru_utime + usage.ru_stime


def one_executor(tmp: Path, until: str, index: int, timeout: float = 30.0, tree: Path | None = None,
                 python: str = PYTHON, floor: bool = False, how: tuple[str, ...] = ("-m", "tfmesos.executor")
                 ) -> tuple[float, float | None]:
    """CPU seconds of one cold executor from exec until the fake agent sees ``until``, and (until
    TASK_RUNNING) its USS in MiB then. ``tree``: the executor imports tfmesos from there;
    ``floor``: floor_executor.py instead of ours; ``how``: the interpreter's arguments (DIRECT:
    main() without runpy)."""
    sandbox = tmp / f"exec-{until.lower()}-{index}-{next(_SANDBOXES)}"
    sandbox.mkdir(parents=True)
    port = 24990 + index % 10
    data = base64.b64encode(b"exec sleep 30").decode() if floor else _task_data(port, python)
    task = {"name": TASK, "task_id": {"value": TASK}, "agent_id": {"value": "bench-S0"}, "data": data}
    # Until SUBSCRIBE: no answer is needed (the stream stays open, unanswered at the kill).
    agent = ScriptedAgent([] if until == "SUBSCRIBE" else [[_subscribed(), {"type": "LAUNCH", "launch": {"task": task}}]])
    env = executor_environment(agent_endpoint=agent.endpoint, agent_id="bench-S0", agent_pid="slave(1)@" + agent.endpoint,
                               framework_id=FRAMEWORK, executor_id=EXECUTOR, directory=sandbox, checkpoint=True,
                               shutdown_grace_period=5.0, gpus=None, command=None)
    if tree is not None:  # a checkout other than the installed one (before/after figures)
        env["PYTHONPATH"] = str(tree)
    elif os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    argv = [python, "-S", "-I", str(FLOOR_EXECUTOR)] if floor else [python, *how]
    with open(sandbox / "stdout", "ab") as out, open(sandbox / "stderr", "ab") as err:
        proc = subprocess.Popen(argv, env=env, cwd=sandbox, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                process_group=0)
    uss = None
    try:
        try:
            agent.wait((lambda: agent.subscribes) if until == "SUBSCRIBE" else (lambda: _running(agent)), timeout)
        except AssertionError:
            raise RuntimeError(f"the executor sent no {until} within {timeout:.0f}s: "
                               + (sandbox / "stderr").read_text()[-1500:]) from None
        if until != "SUBSCRIBE":
            uss = psutil.Process(proc.pid).memory_full_info().uss / 2**20
        return _cpu_of_killed(proc), uss
    finally:
        if proc.returncode is None:
            _cpu_of_killed(proc)
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the task (sleep), if one started
        except ProcessLookupError:
            pass
        agent.close()


def interpreter_floor(python: str = PYTHON) -> float:
    proc = subprocess.Popen([python, "-c", "pass"])
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0
    return usage.ru_utime + usage.ru_stime


def run(tmp: Path, samples: int = 9) -> dict[str, Any]:
    """Interleaved samples of the three (floor, to SUBSCRIBE, to TASK_RUNNING); medians in ms."""
    log(f"executor start: {samples} cold executors to SUBSCRIBE and to TASK_RUNNING, and python -c pass")
    floor, subscribe, running, uss = [], [], [], []
    load = os.getloadavg()[0]
    for i in range(samples):
        floor.append(interpreter_floor())
        subscribe.append(one_executor(tmp, "SUBSCRIBE", i)[0])
        cpu, mib = one_executor(tmp, "TASK_RUNNING", i)
        running.append(cpu)
        uss.append(mib)
        time.sleep(0.05)
    return {"python_pass_ms": summary(_ms(floor)), "to_subscribe_ms": summary(_ms(subscribe)),
            "to_running_ms": summary(_ms(running)), "running_uss_mib": summary(round(x, 2) for x in uss),
            "load_average": [round(load, 2), round(os.getloadavg()[0], 2)]}


def _ms(xs: list[float]) -> list[float]:
    return [round(x * 1000, 1) for x in xs]


def compare(tmp: Path, samples: int, trees: dict[str, Path], pythons: dict[str, str]) -> dict[str, Any]:
    """Interleaved samples of every tree under every interpreter (and of the floor executor and
    ``python -c pass`` under each interpreter): medians of user + sys ms, the USS at TASK_RUNNING,
    the load average (1 min) at each sample's start."""
    cells: dict[str, dict[str, list[float]]] = {}
    loads = []

    def add(name: str, figure: str, value: float | None) -> None:
        if value is not None:
            cells.setdefault(name, {}).setdefault(figure, []).append(value)

    for i in range(samples):
        loads.append(os.getloadavg()[0])
        for py_name, python in pythons.items():
            add(f"python -c pass ({py_name})", "cpu_ms", interpreter_floor(python) * 1000)
            cpu, mib = one_executor(tmp, "TASK_RUNNING", i, python=python, floor=True)
            add(f"floor_executor.py ({py_name})", "to_running_ms", cpu * 1000)
            add(f"floor_executor.py ({py_name})", "uss_mib", mib)
            for tree_name, tree in trees.items():
                name = f"{tree_name} ({py_name})"
                add(name, "to_subscribe_ms", one_executor(tmp, "SUBSCRIBE", i, tree=tree, python=python)[0] * 1000)
                cpu, mib = one_executor(tmp, "TASK_RUNNING", i, tree=tree, python=python)
                add(name, "to_running_ms", cpu * 1000)
                add(name, "uss_mib", mib)
        time.sleep(0.05)
    out: dict[str, Any] = {name: {figure: summary(round(v, 2) for v in values) for figure, values in figures.items()}
                           for name, figures in cells.items()}
    out["load_average"] = summary(round(x, 2) for x in loads)
    return out


def plain_venv(where: Path) -> str:
    """A venv with nothing installed (no editable finder's .pth): tfmesos comes from PYTHONPATH, as
    from a plain install's site-packages."""
    subprocess.run([sys.base_prefix + "/bin/python3", "-m", "venv", "--without-pip", str(where)], check=True)
    return str(where / "bin" / "python")


if __name__ == "__main__":
    # python -m benchmarks.executor_start [SAMPLES]: the figures alone;
    # ... SAMPLES NAME=TREE ... [--record WHAT]: interleaved trees (git archive REF | tar -x -C TREE),
    # under this venv's interpreter and a plain venv's; --record puts them into results.json
    # ("coldexec_ab"), WHAT saying which trees they are.
    import argparse
    import tempfile
    from datetime import datetime, timezone

    parser = argparse.ArgumentParser(prog="python -m benchmarks.executor_start")
    parser.add_argument("samples", type=int, nargs="?", default=9)
    parser.add_argument("trees", nargs="*", metavar="NAME=TREE")
    parser.add_argument("--record", metavar="WHAT", help="into benchmarks/results.json's coldexec_ab")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tfmesos-exec-bench-") as work:
        if args.trees:
            trees = {name: Path(tree).resolve() for name, tree in (arg.split("=", 1) for arg in args.trees)}
            for tree in trees.values():  # their bytecode, once: not in the first samples' CPU
                subprocess.run([PYTHON, "-m", "compileall", "-q", str(tree / "tfmesos")], check=True)
            pythons = {"editable venv": PYTHON, "plain venv": plain_venv(Path(work) / "venv")}
            result = compare(Path(work), args.samples, trees, pythons)
            if args.record:
                record("coldexec_ab", result, f"{datetime.now(timezone.utc):%Y-%m-%dT%H:%M}Z: {args.record}")
        else:
            result = run(Path(work), args.samples)
        print(json.dumps(result, indent=1))
