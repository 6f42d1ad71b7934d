"""Executors forked from the warm interpreter (forkserver.py) are what exec'd ones would be:
the same command line and environment in /proc, their own process group, the sandbox as cwd,
and their exit status reaches the scheduler; the master falls back to exec when asked to, and
when the zygote is gone."""
from __future__ import annotations

import os
import signal
import sys
from typing import Any

import psutil
import pytest

from tests.localmesos.scheduler_client import RawScheduler, framework_info, wait_until

from localmesos import Tuning
from localmesos.agent.forkserver import module_command
from tfmesos.mesos.taskinfo import ExecutorSettings, OfferLedger, build_task_info
from tfmesos.core.actions import TaskLaunch
from tfmesos.mesos.messages import ClusterSpecMessage, NeedSpec, decode, encode
from tfmesos.options.load import resolve_options
from tfmesos.core.spec import Resources, TaskKey
from tfmesos.options.jobspec import job_spec_from_options

SPEC = job_spec_from_options(resolve_options({
    "service": {"name": "fs"}, "job": {"command": "exec sleep 60"},
    "roles": {"worker": {"count": 1, "cpus": 0.1, "mem": 32}}}))


def _launch(scheduler: RawScheduler, task_id: str) -> None:
    offer = scheduler.next_offers(timeout=30)[0]
    port = next(r for r in offer["resources"] if r["name"] == "ports")["ranges"]["range"][0]["begin"]
    task = build_task_info(SPEC, TaskLaunch(TaskKey("worker", 0), task_id, port, Resources(0.1, 32), 0),
                           offer["agent_id"]["value"], OfferLedger(offer), ExecutorSettings(python=sys.executable))
    accept = {"offer_ids": [offer["id"]], "operations": [{"type": "LAUNCH", "launch": {"task_infos": [task]}}]}
    assert scheduler.framework_call("ACCEPT", accept).status == 202


def _running(scheduler: RawScheduler, task_id: str) -> None:
    """Until the task is RUNNING, answering its executor's ask for the ClusterSpec (as tfmesos' scheduler does)."""
    assert scheduler.stream is not None

    def running(event: dict[str, Any]) -> bool:
        if event["type"] == "MESSAGE" and event["message"]["executor_id"]["value"] == task_id:
            assert decode(event["message"]["data"]) == NeedSpec(task_id)
            spec = encode(ClusterSpecMessage.of(1, {"worker": ["127.0.0.1:1"]}))
            reply = scheduler.framework_call("MESSAGE", {"agent_id": event["message"]["agent_id"],
                                                         "executor_id": {"value": task_id}, "data": spec})
            assert reply.status == 202, reply
        if event["type"] != "UPDATE" or event["update"]["status"]["task_id"]["value"] != task_id:
            return False
        status = event["update"]["status"]
        if "uuid" in status:
            scheduler.acknowledge(status)
        assert status["state"] in ("TASK_STAGING", "TASK_STARTING", "TASK_RUNNING"), status
        return status["state"] == "TASK_RUNNING"

    scheduler.stream.wait_for(running, 60)


def _executor(task_id: str) -> psutil.Process:
    # Among this test's processes (its masters run here, the zygote is their child): another
    # checkout's suite may run this test, and its task ids, on this machine at the same time.
    def find() -> psutil.Process | None:
        for process in psutil.Process().children(recursive=True):
            try:
                if process.environ().get("MESOS_EXECUTOR_ID") == task_id and \
                        "tfmesos.executor" in process.cmdline():
                    return process
            except psutil.Error:
                continue
        return None

    return wait_until(find, 30, message=f"the executor of {task_id}")


def _end_of_executor(scheduler: RawScheduler, task_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The task's final update and the executor's FAILURE event (in either order)."""
    assert scheduler.stream is not None
    seen: dict[str, dict[str, Any]] = {}

    def wanted(event: dict[str, Any]) -> bool:
        if event["type"] == "FAILURE" and "executor_id" in event["failure"]:
            seen["failure"] = event["failure"]
        elif event["type"] == "UPDATE" and event["update"]["status"]["state"] == "TASK_FAILED":
            seen["update"] = event["update"]["status"]
            scheduler.acknowledge(seen["update"])
        return len(seen) == 2

    scheduler.stream.wait_for(wanted, 30)
    assert seen["update"]["task_id"]["value"] == task_id
    return seen["update"], seen["failure"]


def _pidfds(process: psutil.Process) -> int:
    found = 0
    for fd in os.listdir(f"/proc/{process.pid}/fd"):
        try:
            found += os.readlink(f"/proc/{process.pid}/fd/{fd}") == "anon_inode:[pidfd]"
        except OSError:
            continue
    return found


def _zygote() -> psutil.Process | None:
    for child in psutil.Process().children():
        try:
            if any(part.endswith("zygote.py") for part in child.cmdline()):
                return child
        except psutil.Error:
            continue
    return None


def test_a_forked_executor_shows_and_ends_like_an_exec_d_one(make_master):
    forked_master = make_master()
    exec_master = make_master(tuning=Tuning(stop_grace_period=1.0, fork_modules=()))
    processes = {}
    schedulers = []
    try:
        for name, master in (("forked", forked_master), ("exec", exec_master)):
            scheduler = RawScheduler(master.address)
            schedulers.append(scheduler)
            scheduler.subscribe(framework_info(f"fork-{name}"))
            if name == "forked":  # a sibling first: the zygote holds a pidfd of it, which the next child must not
                _launch(scheduler, "fs.worker.0.sibling")
                _running(scheduler, "fs.worker.0.sibling")
            _launch(scheduler, f"fs.worker.0.{name}")
            _running(scheduler, f"fs.worker.0.{name}")
            processes[name] = _executor(f"fs.worker.0.{name}")

        forked, execd = processes["forked"], processes["exec"]
        zygote = _zygote()
        assert zygote is not None and forked.ppid() == zygote.pid  # the fork server made it ...
        assert execd.ppid() == os.getpid()  # ... and without it the master itself
        for process in (forked, execd):
            assert process.cmdline() == [sys.executable, "-m", "tfmesos.executor"]
            env = process.environ()
            assert os.getpgid(process.pid) == process.pid  # its own process group (killpg(0) safe)
            assert process.cwd() == env["MESOS_DIRECTORY"]
            assert env["PWD"] == os.path.realpath(env["MESOS_DIRECTORY"])  # as `sh -c` exports it
            assert "HOME" not in env and "PYTHONPATH" not in env  # no leak of the master's environment
        assert set(forked.environ()) == set(execd.environ())
        assert _pidfds(forked) == _pidfds(execd) == 1  # its task's own: none of the zygote's

        # Its end (and how: the zygote reaps it and reports the status) reaches the scheduler.
        forked.send_signal(signal.SIGKILL)
        update, failure = _end_of_executor(schedulers[0], "fs.worker.0.forked")
        assert failure["status"] == signal.SIGKILL  # a raw wait status: killed by signal 9
        assert update["reason"] == "REASON_EXECUTOR_TERMINATED"
    finally:
        for scheduler in schedulers:
            scheduler.teardown()
            scheduler.close()


def test_without_the_zygote_running_executors_are_still_watched_and_new_ones_exec_d(make_master):
    master = make_master()
    scheduler = RawScheduler(master.address)
    scheduler.subscribe(framework_info("fork-lost"))
    try:
        _launch(scheduler, "fs.worker.0.a")
        _running(scheduler, "fs.worker.0.a")
        first = _executor("fs.worker.0.a")
        zygote = _zygote()
        assert zygote is not None and first.ppid() == zygote.pid
        zygote.kill()
        zygote.wait(10)

        first.send_signal(signal.SIGKILL)  # no zygote to report it: the master notices all the same
        update, failure = _end_of_executor(scheduler, "fs.worker.0.a")
        assert failure["status"] == -1  # unknown: only the zygote could have reaped it

        _launch(scheduler, "fs.worker.0.b")
        _running(scheduler, "fs.worker.0.b")
        assert _executor("fs.worker.0.b").ppid() == os.getpid()
    finally:
        scheduler.teardown()
        scheduler.close()


@pytest.mark.parametrize("command, expected", [
    ({"value": "exec /usr/bin/python3 -m tfmesos.executor"}, ("/usr/bin/python3", "tfmesos.executor", [])),
    ({"value": "exec '/opt/my env/python' -m tfmesos.executor --x 1"},
     ("/opt/my env/python", "tfmesos.executor", ["--x", "1"])),
    ({"shell": False, "value": "/usr/bin/python3", "arguments": ["/usr/bin/python3", "-m", "m"]},
     ("/usr/bin/python3", "m", [])),
    ({"value": "/usr/bin/python3 -m tfmesos.executor > log"}, None),  # shell syntax: exec'd
    ({"value": "X=1 /usr/bin/python3 -m tfmesos.executor"}, None),
    ({"value": "exec python3 -m tfmesos.executor"}, None),  # PATH lookup: exec'd
    ({"value": "exec /usr/bin/python3 -u -m tfmesos.executor"}, None),  # interpreter flags
    ({"value": "exec /usr/bin/python3 -m tfmesos.executor; echo done"}, None),
    ({"value": "exec /usr/bin/python3 -m 'unterminated"}, None),
])
def test_only_a_plain_python_dash_m_command_is_forked(command, expected):
    parsed = module_command(command)
    assert (None if parsed is None else (parsed.python, parsed.module, parsed.args)) == expected


def test_the_zygote_runs_a_module_as_python_dash_m_would_and_reports_its_exit(tmp_path):
    """The zygote's own protocol: a child runs the module with its arguments, its output goes to
    the sandbox files, and its exit code comes back (only the zygote, its parent, can know it)."""
    import json
    import socket
    import subprocess

    from localmesos.agent import zygote

    ours, theirs = socket.socketpair()
    proc = subprocess.Popen([sys.executable, zygote.__file__, str(theirs.fileno()), "", "json.tool"],
                            pass_fds=(theirs.fileno(),), env={"PATH": os.environ["PATH"]}, cwd="/")
    theirs.close()
    lines = ours.makefile("r")
    try:
        assert json.loads(lines.readline()) == {"ready": zygote.VERSION, "modules": ["json.tool"]}
        request = {"id": 1, "argv0": sys.executable, "module": "json.tool", "args": ["--no-such-flag"],
                   "env": {"PATH": os.environ["PATH"], "MESOS_DIRECTORY": str(tmp_path)}, "cwd": str(tmp_path)}
        ours.sendall(json.dumps(request).encode() + b"\n")
        pid = json.loads(lines.readline())["pid"]
        assert json.loads(lines.readline()) == {"exit": pid, "returncode": 2}  # argparse's usage error
        assert "usage:" in (tmp_path / "stderr").read_text()
        wait_until(lambda: not psutil.pid_exists(pid), 10, message="the child to be reaped")
        not_preloaded = {**request, "id": 2, "module": "http.server"}
        ours.sendall(json.dumps(not_preloaded).encode() + b"\n")
        assert "was not preloaded" in json.loads(lines.readline())["error"]
    finally:
        lines.close()
        ours.close()  # the zygote ends with its socket
        proc.wait(10)
