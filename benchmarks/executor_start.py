"""A cold executor's start: the CPU of ``python -m tfmesos.executor`` exec'd as a real Mesos agent
starts it (no fork server), to its SUBSCRIBE and to its TASK_RUNNING.

A stand-in agent (the executor driver tests' ``ScriptedAgent``: a socket in this process, the v1
executor API's SUBSCRIBE and calls, nothing else) gets the executor's SUBSCRIBE. In the ``subscribe`` mode it kills the executor
(SIGKILL) the moment the request has arrived, so the executor's ``wait4`` rusage (user + sys,
which the kernel scales to the exact run time) is its CPU from exec to SUBSCRIBE sent. In the
``running`` mode it answers SUBSCRIBED, a LAUNCH of a task (``exec sleep 30``, the payload built
by the scheduler's own ``task_payload``) and the ClusterSpec message the executor asks for (sent
with the LAUNCH, the scheduler's answer without its round trip), and kills the executor when its
TASK_RUNNING arrives: the CPU of a whole task start (its ask included), without the task's own. The executor's environment is the embedded agent's (``executor_environment``), its
stdout and stderr are sandbox files. ``python -c pass`` is measured the same way: the floor.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from benchmarks.common import PYTHON, log, summary
from localmesos.agent.sandbox import executor_environment
from tfmesos.core.actions import TaskLaunch
from tfmesos.core.spec import JobSpec, Resources, RoleSpec, ServiceSpec, TaskKey
from tfmesos.core.tensorflow.profile import TENSORFLOW
from tfmesos.mesos.messages import ClusterSpecMessage, encode
from tfmesos.mesos.taskinfo import task_payload
from tests.mesos.test_executor_driver import ScriptedAgent

FRAMEWORK, EXECUTOR, TASK = "bench-fw-0000", "bench.worker.0.1", "bench.worker.0.1"


def _subscribed() -> dict[str, Any]:
    return {"type": "SUBSCRIBED", "subscribed": {
        "executor_info": {"executor_id": {"value": EXECUTOR}, "framework_id": {"value": FRAMEWORK},
                          "command": {"value": f"{PYTHON} -m tfmesos.executor"}},
        "framework_info": {"id": {"value": FRAMEWORK}, "user": "", "name": "bench", "checkpoint": True},
        "agent_info": {"id": {"value": "bench-S0"}, "hostname": "127.0.0.1"}}}


def _running(agent: ScriptedAgent) -> bool:
    return any(c["type"] == "UPDATE" and c["update"]["status"]["state"] == "TASK_RUNNING" for c in agent.calls)


def _task_data(port: int) -> str:
    key = TaskKey("worker", 0)
    spec = JobSpec(service=ServiceSpec(name="bench"),
                   roles=(RoleSpec("worker", 1, Resources(cpus=0.1, mem=32), "exec sleep 30"),), streamed=(),
                   profile=TENSORFLOW)
    launch = TaskLaunch(key, TASK, port, Resources(cpus=0.1, mem=32), 0)
    return encode(task_payload(spec, launch, PYTHON))


def _cluster_spec(port: int) -> dict[str, Any]:
    """The MESSAGE event carrying the task's ClusterSpec, as the scheduler answers the executor's ask."""
    return {"type": "MESSAGE", "message": {"data": encode(ClusterSpecMessage.of(1, {"worker": [f"127.0.0.1:{port}"]}))}}


def _cpu_of_killed(proc: subprocess.Popen) -> float:
    """SIGKILL, reap: user + sys of the process (its threads included, its unreaped task not)."""
    try:
        proc.send_signal(signal.SIGKILL)
    except ProcessLookupError:
        pass
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = -9
    return usage.ru_utime + usage.ru_stime


def one_executor(tmp: Path, until: str, index: int, timeout: float = 30.0) -> float:
    """CPU seconds of one cold executor from exec until the fake agent sees ``until``."""
    sandbox = tmp / f"exec-{until.lower()}-{index}"
    sandbox.mkdir(parents=True)
    port = 24990 + index % 10
    task = {"name": TASK, "task_id": {"value": TASK}, "agent_id": {"value": "bench-S0"}, "data": _task_data(port)}
    # Until SUBSCRIBE: no answer is needed (the stream stays open, unanswered at the kill).
    agent = ScriptedAgent([] if until == "SUBSCRIBE" else [[_subscribed(), {"type": "LAUNCH", "launch": {"task": task}},
                                                           _cluster_spec(port)]])
    env = executor_environment(agent_endpoint=agent.endpoint, agent_id="bench-S0", agent_pid="slave(1)@" + agent.endpoint,
                               framework_id=FRAMEWORK, executor_id=EXECUTOR, directory=sandbox, checkpoint=True,
                               shutdown_grace_period=5.0, gpus=None, command=None)
    if os.environ.get("PYTHONPATH"):  # a checkout other than the installed one (before/after figures)
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    with open(sandbox / "stdout", "ab") as out, open(sandbox / "stderr", "ab") as err:
        proc = subprocess.Popen([PYTHON, "-m", "tfmesos.executor"], env=env, cwd=sandbox, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=err, process_group=0)
    try:
        try:
            agent.wait((lambda: agent.subscribes) if until == "SUBSCRIBE" else (lambda: _running(agent)), timeout)
        except AssertionError:
            raise RuntimeError(f"the executor sent no {until} within {timeout:.0f}s: "
                               + (sandbox / "stderr").read_text()[-1500:]) from None
        return _cpu_of_killed(proc)
    finally:
        if proc.returncode is None:
            _cpu_of_killed(proc)
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the task (sleep), if one started
        except ProcessLookupError:
            pass
        agent.close()


def interpreter_floor() -> float:
    proc = subprocess.Popen([PYTHON, "-c", "pass"])
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0
    return usage.ru_utime + usage.ru_stime


def run(tmp: Path, samples: int = 9) -> dict[str, Any]:
    """Interleaved samples of the three (floor, to SUBSCRIBE, to TASK_RUNNING); medians in ms."""
    log(f"executor start: {samples} cold executors to SUBSCRIBE and to TASK_RUNNING, and python -c pass")
    floor, subscribe, running = [], [], []
    load = os.getloadavg()[0]
    for i in range(samples):
        floor.append(interpreter_floor())
        subscribe.append(one_executor(tmp, "SUBSCRIBE", i))
        running.append(one_executor(tmp, "TASK_RUNNING", i))
        time.sleep(0.05)
    ms = lambda xs: [round(x * 1000, 1) for x in xs]  # noqa: E731
    return {"python_pass_ms": summary(ms(floor)), "to_subscribe_ms": summary(ms(subscribe)),
            "to_running_ms": summary(ms(running)),
            "load_average": [round(load, 2), round(os.getloadavg()[0], 2)]}


if __name__ == "__main__":  # python -m benchmarks.executor_start [SAMPLES]: the figures alone
    import sys
    import tempfile

    with tempfile.TemporaryDirectory(prefix="tfmesos-exec-bench-") as work:
        print(json.dumps(run(Path(work), int(sys.argv[1]) if len(sys.argv) > 1 else 9), indent=1))
