"""The rendered DC/OS app really runs: its args and env, started the way Marathon starts them on an
agent, run the job on a real master with its state in a real ZooKeeper; the health check answers.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from tests import zookeeper
from tests.package.helpers import app_definition_problems
from tests.e2e.harness import ROOT, TFMESOS, LineProcess, LocalMaster, accuracy, wait_gone, write_options
from tests.e2e.test_jobs import PSS

SERVICE = "marathon-digits"
VENV_BIN = Path(TFMESOS[0]).parent  # the venv's python, and its `tfmesos` console script beside it




@pytest.fixture
def master(tmp_path):
    m = LocalMaster(tmp_path / "master")
    yield m
    m.stop()


def render_package(options: Path) -> dict[str, Any]:
    """What DC/OS would install for this options file: ``tfmesos package render``."""
    done = subprocess.run(TFMESOS + ["package", "render", str(options), "--show-env-values"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def api_on_loopback(app: dict[str, Any]) -> dict[str, Any]:
    """The app's API listens on every interface (``--api-host 0.0.0.0``), right on an agent; a test
    must stay on loopback, so that one flag, and nothing else, is rewritten."""
    script = app["args"][2]
    assert script.count("--api-host 0.0.0.0") == 1, script
    args = list(app["args"])
    args[2] = script.replace("--api-host 0.0.0.0", "--api-host 127.0.0.1")
    return {**app, "args": args}


def marathon_argv(app: dict[str, Any]) -> list[str]:
    """Marathon: ``cmd`` runs under ``sh -c``; ``args`` is the command line itself (no shell)."""
    assert ("cmd" in app) != ("args" in app), "a Marathon app has either cmd or args"
    return ["/bin/sh", "-c", app["cmd"]] if "cmd" in app else list(app["args"])


def marathon_env(app: dict[str, Any], port: int, sandbox: Path) -> dict[str, str]:
    """The app's env plus what Marathon and the Mesos agent add for a task; nothing of ours leaks in
    except PATH, which puts the venv's ``tfmesos`` first as the image would."""
    assert (VENV_BIN / "tfmesos").is_file(), f"no tfmesos console script in {VENV_BIN}"
    env = {name: value for name, value in app["env"].items() if isinstance(value, str)}  # secrets are references
    env.update(
        PATH=f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin",
        HOME=str(sandbox),
        HOST="127.0.0.1",
        PORT0=str(port), PORT=str(port), PORTS=str(port), PORT_API=str(port),
        MARATHON_APP_ID=app["id"],
        MARATHON_APP_VERSION="2024-01-01T00:00:00.000Z",
        MARATHON_APP_RESOURCE_CPUS=str(app["cpus"]),
        MARATHON_APP_RESOURCE_MEM=str(app["mem"]),
        MESOS_TASK_ID=f"{app['id'].strip('/')}.instance-0000._app.1",
        MESOS_SANDBOX=str(sandbox),
    )
    return env


def get(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as exc:
        return exc.code, None


def poll(url: str, accept, timeout: float) -> Any:
    """GET ``url`` until ``accept(status, body)`` holds (a deadline, not a sleep)."""
    deadline, last = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        try:
            last = get(url)
        except OSError as exc:  # not listening yet
            last = exc
        else:
            if accept(*last):
                return last[1]
        time.sleep(0.2)
    raise AssertionError(f"{url}: never acceptable; last answer {last!r}")


def zk_state(zk: zookeeper.ZooKeeper, node: str) -> dict[str, Any] | None:
    client = KazooClient(hosts=zk.hosts, timeout=15)
    client.start(timeout=15)
    try:
        if client.exists(node) is None:
            return None
        saved = json.loads(client.get(node)[0])
        return {"finished": saved.get("finished"), "phase": saved["job"].get("phase")}
    finally:
        client.stop()
        client.close()


def tasks_on_master(master: LocalMaster) -> list[str]:
    state = master.state()
    return [t["id"] for f in state.get("frameworks", []) + state.get("completed_frameworks", [])
            for t in f.get("tasks", []) + f.get("completed_tasks", [])]


def test_rendered_app_runs_the_job_under_marathon_conditions_and_stays_finished(tmp_path, zk, master):
    options = write_options(
        tmp_path / "options.json", PSS,
        service={"name": SERVICE, "zk": f"zk://{zk.hosts}/tfmesos-e2e", "mesos_master": master.address},
    )
    rendered = render_package(options)
    assert app_definition_problems(rendered) == []
    app = api_on_loopback(rendered)
    assert app["env"]["MESOS_MASTER"] == master.address and app["env"]["TFMESOS_ZK"] == f"zk://{zk.hosts}/tfmesos-e2e"
    [check] = app["healthChecks"]
    assert check["protocol"] in ("MESOS_HTTP", "HTTP")
    assert app["portDefinitions"][check["portIndex"]]["name"] == "api"

    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    port = zookeeper.free_port()
    env = marathon_env(app, port, sandbox)
    # Marathon's MESOS_HTTP check: GET http://<task host>:PORT<portIndex><path>.
    health_url = f"http://{env['HOST']}:{env['PORT%d' % check['portIndex']]}{check['path']}"
    status_url = f"http://127.0.0.1:{port}/v1/status"

    first = LineProcess(marathon_argv(app), env=env, cwd=sandbox)
    second = None
    try:
        first.wait_for(rf"scheduler API on http://127\.0\.0\.1:{port}/v1/status", 60)
        first.wait_for(r"chief:0 \| step 100 ", 120)
        assert get(health_url) == (200, {"healthy": True}), "the health check passes while the job runs"
        running = get(status_url)[1]
        assert running["phase"] in ("RUNNING", "FINISHING") and running["name"] == SERVICE
        fid = running["framework_id"]

        first.wait_for(rf"job {SERVICE} SUCCEEDED: chief:0 finished", 180)
        first.wait_for(r"job over; status stays on", 30)
        assert first.proc.poll() is None, "under Marathon a finished scheduler does not exit (Marathon would restart it)"
        assert poll(status_url, lambda code, body: code == 200 and body["phase"] == "SUCCEEDED", 10)["name"] == SERVICE
        assert get(health_url) == (200, {"healthy": True})
        launched = re.findall(r"launch \S+ as (\S+)", first.output)
        # Four tasks, or more if a task failed and was relaunched (each launch has its own id).
        assert len(launched) >= 4 and len(set(launched)) == len(launched), first.output[-6000:]
        assert sorted(tasks_on_master(master)) == sorted(launched)
        first.kill(signal.SIGTERM)
        assert first.wait(30) == 0, first.output[-3000:]
        assert not wait_gone(SERVICE)
        assert zk_state(zk, f"/tfmesos-e2e/{SERVICE}/state") == {"finished": True, "phase": "SUCCEEDED"}, (
            "the finished job is recorded in ZooKeeper under service.zk, where a restarted app on any agent finds it")

        # Marathon restarts the app (an agent lost, an upgrade): the finished job is not run again.
        second = LineProcess(marathon_argv(app), env=env, cwd=sandbox)
        second.wait_for(rf"job '{SERVICE}' already ended \(SUCCEEDED\); serving its status", 60)
        final = poll(status_url, lambda code, body: code == 200, 30)
        assert final["phase"] == "SUCCEEDED"
        assert {(t["role"], t["index"], t["state"]) for t in final["tasks"]} >= {("chief", 0, "TASK_FINISHED")}
        assert get(health_url) == (200, {"healthy": True})
        second.kill(signal.SIGTERM)
        assert second.wait(30) == 0, second.output[-3000:]
    finally:
        for proc in (first, second):
            if proc is not None:
                proc.killpg()
    assert accuracy(first.output) >= 0.9
    assert "launch " not in second.output and "registered as framework" not in second.output
    state = master.state()
    frameworks = state.get("frameworks", []) + state.get("completed_frameworks", [])
    assert [f["id"] for f in frameworks] == [fid], "the restart subscribed no second framework"
    assert sorted(tasks_on_master(master)) == sorted(launched), "no new task was launched"
    assert not wait_gone(SERVICE, timeout=5)


def test_a_restart_serves_a_finished_job_and_a_new_install_runs_it_anew(tmp_path):
    """Marathon restarting the app (same version) must not run a finished job again; installing it
    again under the same name, or changing the app, gives the app a new version, and that one runs
    the job anew instead of serving the old end."""
    options = write_options(tmp_path / "options.json", service={"name": "redeployed"},
                            job={"command": "true", "workdir": str(tmp_path)},
                            roles={"chief": {"count": 1, "cpus": 0.1, "mem": 64}})
    argv = TFMESOS + ["run", str(options), "--api-port", "0", "--state-dir", str(tmp_path / "state")]

    def instance(version: str) -> LineProcess:
        env = {**os.environ, "MARATHON_APP_ID": "/redeployed", "MARATHON_APP_VERSION": version}
        return LineProcess(argv, env=env)

    def stop(proc: LineProcess) -> str:
        proc.wait_for(r"job over; status stays on", 120)  # printed once SIGTERM is waited for
        proc.kill(signal.SIGTERM)
        assert proc.wait(30) == 0, proc.output[-3000:]
        return proc.output

    procs = [instance("2026-11-26T10:00:00.000Z")]
    try:
        first = stop(procs[-1])
        assert first.count("launch chief:0 ") == 1 and "job redeployed SUCCEEDED" in first, first[-3000:]
        procs.append(instance("2026-11-26T10:00:00.000Z"))  # Marathon restarts the same app
        restarted = stop(procs[-1])
        assert "job 'redeployed' already ended (SUCCEEDED); serving its status" in restarted, restarted[-3000:]
        assert "launch " not in restarted
        procs.append(instance("2026-11-26T11:00:00.000Z"))  # installed again: a new version
        reinstalled = stop(procs[-1])
        assert "job 'redeployed' ended before (SUCCEEDED); starting it anew" in reinstalled, reinstalled[-3000:]
        assert reinstalled.count("launch chief:0 ") == 1 and "job redeployed SUCCEEDED" in reinstalled
        procs.append(instance("2026-11-26T11:00:00.000Z"))  # and that one's restart serves the new end
        assert "already ended (SUCCEEDED); serving its status" in stop(procs[-1])
    finally:
        for proc in procs:
            proc.killpg()
    assert not wait_gone("redeployed", timeout=5)
