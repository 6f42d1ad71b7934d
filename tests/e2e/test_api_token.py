"""On a cluster shared by two teams, one team's task cannot stop or restart the other team's job
through its API, whose scheduler listens on every interface (--api-host 0.0.0.0, as under
Marathon): with no token given, the scheduler made one and kept it for its owner alone. The
owner's `tfmesos kill NAME` finds it with what it already had (the state directory, or --zk and
TFMESOS_ZK_AUTH), and the token is found nowhere else: the console, the API, the page, the
records, the Marathon app, the master's state.

The scenario runs against any master with ``address`` and ``state()``: the embedded one here, a
real Apache Mesos in test_api_token_real_mesos.py. Traffic stays on loopback (127.0.0.1)."""
from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.e2e.harness import TFMESOS, LocalMaster, eventually, run_scheduler, stop_scheduler, write_options

pytestmark = pytest.mark.slow

# Team B's task: what any process that learnt team A's scheduler address can send it.
PROBE = """
import os, urllib.error, urllib.request
api = os.environ["TEAM_A_API"]
for path, token in (("/v1/shutdown", ""), ("/v1/restart/chief:0", ""), ("/v1/shutdown", "guess")):
    request = urllib.request.Request("http://" + api + path, data=b"", method="POST",
                                     headers={"Authorization": "Bearer " + token} if token else {})
    try:
        code = urllib.request.urlopen(request, timeout=10).status
    except urllib.error.HTTPError as exc:
        code = exc.code
    print("B-PROBE", path, token or "-", code, flush=True)
"""
KILLED_EXIT = 5


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(TFMESOS + list(args), capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def _get(api: str, path: str) -> bytes:
    with urllib.request.urlopen(f"http://{api}{path}", timeout=10) as resp:
        return resp.read()


def _files_text(folder: Path, but: Path | None = None) -> str:
    return "".join(p.read_text(errors="replace") for p in sorted(folder.rglob("*")) if p.is_file() and p != but)


def _api_port(run) -> str:
    return run.wait_for(r"scheduler API on http://\S+:(\d+)/v1/status", 60).group(1)


def run_team_b_cannot_stop_team_a(tmp_path: Path, master, team_a: dict, team_b: dict, a_args=(), b_args=()) -> None:
    """``team_a``/``team_b``: service options of each team (role, principal); ``*_args``: more
    `tfmesos run` flags (the master, each team's credentials are in ``env`` of the team)."""
    gate = tmp_path / "gate"
    state_a, state_b = tmp_path / "state-a", tmp_path / "state-b"
    task = {"count": 1, "cpus": 0.2, "mem": 64}
    a_opts = write_options(tmp_path / "a.json", service={"name": "token-a", **team_a["service"]},
                           job={"command": f'while [ ! -e {gate} ]; do sleep 0.2; done; echo team A done'},
                           roles={"chief": task, "worker": {"count": 0}}, policies={"placement_timeout_seconds": 60})
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    runs = []
    try:
        a = run_scheduler(a_opts, *a_args, "--api-host", "0.0.0.0", "--api-port", "0", "--state-dir", str(state_a),
                          env={**os.environ, **team_a.get("env", {})})
        runs.append(a)
        a_api = f"127.0.0.1:{_api_port(a)}"
        a.wait_for(r"chief:0 TASK_RUNNING", 90)
        token_file = state_a / "live" / "token-a.token"
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        token = token_file.read_text()
        assert len(token) >= 43, "at least 128 bits (256 made)"

        b_opts = write_options(tmp_path / "b.json", service={"name": "token-b", **team_b["service"]},
                               job={"command": f"{sys.executable} {probe}", "env": [f"TEAM_A_API={a_api}"]},
                               roles={"chief": task, "worker": {"count": 0}}, policies={"placement_timeout_seconds": 60})
        b = run_scheduler(b_opts, *b_args, "--state-dir", str(state_b), env={**os.environ, **team_b.get("env", {})})
        runs.append(b)
        assert b.wait(120) == 0, b.output[-3000:]
        probes = [line.split("B-PROBE ", 1)[1] for line in b.output.splitlines() if "B-PROBE " in line]
        assert probes == ["/v1/shutdown - 401", "/v1/restart/chief:0 - 401", "/v1/shutdown guess 401"], b.output[-3000:]

        # Team A's job goes on, untouched; reading stays open (api_token_reads is off).
        status = json.loads(_get(a_api, "/v1/status"))
        assert status["phase"] == "RUNNING" and status["tasks"][0]["requested_restarts"] == 0, status

        # The token is nowhere but its 0600 file: not in the API, the page, the records, the
        # master's state, the app Marathon would run, B's console or A's.
        from tests.package.helpers import render

        served = b"".join(_get(a_api, p) for p in ("/v1/status", "/", "/web/app.js", "/web/index.html", "/metrics"))
        page = _get(a_api, "/").decode()
        assert "tfmesos kill NAME" in page and "#token=TOKEN" in page, "the page says how to get the token"
        app = json.dumps(render(json.loads(a_opts.read_text())))
        where = {"api": served.decode(), "records": _files_text(state_a, but=token_file), "app": app,
                 "master": json.dumps(master.state()), "B": b.output, "A": a.output}
        assert [name for name, text in where.items() if token in text] == []

        gate.touch()
        assert a.wait(120) == 0, a.output[-3000:]
        assert "job token-a SUCCEEDED" in a.output
        assert token not in a.output and token not in _files_text(state_a), "nor at the end, in the kept record"
        assert not token_file.exists(), "gone with the run"

        # Team A's own `tfmesos restart NAME ROLE:INDEX` and `tfmesos kill NAME`, with A's state
        # directory and nothing more, restart a task and stop its job.
        k_opts = write_options(tmp_path / "k.json", service={"name": "token-a-kill", **team_a["service"]},
                               job={"command": "sleep 300"}, roles={"chief": task, "worker": {"count": 0}})
        k = run_scheduler(k_opts, *a_args, "--api-host", "0.0.0.0", "--api-port", "0", "--state-dir", str(state_a),
                          env={**os.environ, **team_a.get("env", {})})
        runs.append(k)
        k.wait_for(r"chief:0 TASK_RUNNING", 90)
        restarted = _cli("restart", "token-a-kill", "chief:0", "--state-dir", str(state_a))
        assert restarted.returncode == 0, restarted.stderr
        k.wait_for(r"chief:0: restart asked for by a person", 30)
        killed = _cli("kill", "token-a-kill", "--state-dir", str(state_a))
        assert killed.returncode == 0, killed.stderr
        assert k.wait(60) == KILLED_EXIT and "job token-a-kill KILLED: stopped on request" in k.output, k.output[-3000:]
    finally:
        for run in runs:
            stop_scheduler(run)


def test_another_teams_task_gets_401_and_the_owners_kill_name_works_on_the_embedded_master(tmp_path):
    master = LocalMaster(tmp_path / "master", agents=2)
    try:
        run_team_b_cannot_stop_team_a(tmp_path, master, {"service": {"role": "team-a"}},
                                      {"service": {"role": "team-b"}}, ("--master", master.address),
                                      ("--master", master.address))
    finally:
        master.stop()


def test_with_zookeeper_the_owner_finds_the_token_with_its_zk_credentials_and_an_open_zookeeper_gets_none(tmp_path, zk):
    """--zk with TFMESOS_ZK_AUTH: the token is also kept in ZooKeeper, under the owner's digest
    ACL, so the owner's `tfmesos kill NAME --zk` works from a machine without the run's state
    directory; without the variable nothing is written there (the console says so), and kill from
    elsewhere is refused, naming where to look."""
    url = f"zk://{zk.hosts}/tfmesos-token-e2e"
    elsewhere = str(tmp_path / "another-machine")  # a state directory holding nothing of the run
    auth = {"TFMESOS_ZK_AUTH": "team-a:pw-a"}
    for name, env in (("zk-auth", auth), ("zk-open", {})):
        opts = write_options(tmp_path / f"{name}.json", service={"name": name}, job={"command": "sleep 300"},
                             roles={"chief": {"count": 1, "cpus": 0.2, "mem": 64}, "worker": {"count": 0}})
        run = run_scheduler(opts, "--zk", url, "--api-port", "0", "--state-dir", str(tmp_path / "state"),
                            env={**os.environ, **env})
        try:
            api = f"127.0.0.1:{_api_port(run)}"
            run.wait_for(r"chief:0 TASK_RUNNING", 90)
            from kazoo.client import KazooClient

            client = KazooClient(hosts=zk.hosts)
            client.start(15)
            try:
                assert bool(client.exists(f"/tfmesos-token-e2e/{name}/api-token")) == bool(env)
            finally:
                client.stop()
                client.close()
            if not env:
                assert "the API's token is not kept in ZooKeeper (TFMESOS_ZK_AUTH is not set" in run.output
                refused = _cli("kill", name, "--api", api, "--zk", url, "--state-dir", elsewhere)
                assert refused.returncode == 1 and "needs its token" in refused.stderr, refused.stderr
                assert run.proc.poll() is None
                killed = _cli("kill", name, "--state-dir", str(tmp_path / "state"))  # from the run's machine
            else:
                assert "not kept in ZooKeeper" not in run.output
                without = _cli("kill", name, "--api", api, "--zk", url, "--state-dir", elsewhere)
                assert without.returncode == 1, "another team's credentials-less client"
                killed = _cli("kill", name, "--api", api, "--zk", url, "--state-dir", elsewhere, env=auth)
            assert killed.returncode == 0, killed.stderr
            assert run.wait(60) == KILLED_EXIT, run.output[-3000:]
        finally:
            stop_scheduler(run)


def test_the_page_offers_kill_and_restart_only_to_a_browser_with_the_token(tmp_path):
    """Opened plainly, the page reads the job and says how to get the token, with no kill or
    restart to click; opened as /#token=TOKEN (the owner's, from the 0600 file), it restarts a task
    and kills the job, each after a confirm."""
    from tests.e2e.test_operating import CHROMEDRIVER, CHROMIUM, browser, click

    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.fail("chromium and chromedriver are needed (make test installs Debian's chromium chromium-driver)")
    from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    state = tmp_path / "state"
    opts = write_options(tmp_path / "o.json", service={"name": "page-token"}, job={"command": "exec sleep 300"},
                         roles={"chief": {"count": 1, "cpus": 0.2, "mem": 64}, "worker": {"count": 1, "cpus": 0.2, "mem": 64}})
    run = run_scheduler(opts, "--api-host", "0.0.0.0", "--api-port", "0", "--state-dir", str(state))
    driver = None
    try:
        page = f"http://127.0.0.1:{_api_port(run)}/"
        run.wait_for(r"worker:0 TASK_RUNNING", 90)
        run.wait_for(r"chief:0 TASK_RUNNING", 90)
        driver = browser()
        wait = WebDriverWait(driver, 30, poll_frequency=0.2, ignored_exceptions=(StaleElementReferenceException,))
        shown = "return [...document.querySelectorAll(arguments[0])].filter(e => e.offsetParent !== null).length"

        driver.get(page)
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#tasks tbody tr")) == 2)
        note = wait.until(lambda d: d.find_element(By.ID, "token-note").is_displayed() and d.find_element(By.ID, "token-note"))
        assert "tfmesos kill page-token" in note.text and "live/page-token.token" in note.text, note.text
        assert driver.execute_script(shown, "#kill-job, button.restart-task") == 0

        token = (state / "live" / "page-token.token").read_text()
        driver.get(page + "#token=" + token)
        driver.refresh()  # a new fragment alone does not reload the page
        wait.until(lambda d: d.execute_script(shown, "button.restart-task") == 2)
        assert not driver.find_element(By.ID, "token-note").is_displayed()

        def accept(d) -> bool:
            try:
                d.switch_to.alert.accept()
                return True
            except NoAlertPresentException:
                return False

        wait.until(lambda d: click(d, 'tr[data-task="worker:0"] button.restart-task'))
        wait.until(accept)
        wait.until(lambda d: "worker:0: restart asked for by a person" in d.find_element(By.ID, "events").text)

        wait.until(lambda d: click(d, "#kill-job"))
        wait.until(accept)
        assert run.wait(60) == KILLED_EXIT and "job page-token KILLED: stopped on request" in run.output, run.output[-3000:]
        assert token not in run.output
    finally:
        if driver is not None:
            driver.quit()
        stop_scheduler(run)


def test_with_api_token_reads_the_owners_status_and_logs_find_the_made_token(tmp_path):
    """service.api_token_reads with no token given: the made one guards reading too, and the
    owner's `tfmesos status|logs NAME` (the run's state directory) find it; a plain GET gets 401."""
    state = tmp_path / "state"
    opts = write_options(tmp_path / "o.json", service={"name": "reads-token", "api_token_reads": True},
                         job={"command": "echo reads-token-says-hi; exec sleep 300"},
                         roles={"chief": {"count": 1, "cpus": 0.2, "mem": 64}, "worker": {"count": 0}})
    run = run_scheduler(opts, "--api-port", "0", "--state-dir", str(state))
    try:
        api = f"127.0.0.1:{_api_port(run)}"
        run.wait_for(r"chief:0 TASK_RUNNING", 90)
        with pytest.raises(urllib.error.HTTPError) as refused:
            _get(api, "/v1/status")
        assert refused.value.code == 401
        assert _get(api, "/v1/health") and b"kill" in _get(api, "/"), "health and the page's files stay open"
        status = _cli("status", "reads-token", "--state-dir", str(state))
        assert status.returncode == 0 and "job reads-token  phase RUNNING" in status.stdout, status.stderr
        logs = eventually(lambda: (out := _cli("logs", "reads-token", "chief:0", "--state-dir", str(state))).returncode == 0
                          and "reads-token-says-hi" in out.stdout and out, 60, "the chief's log")
        assert logs.stderr == ""
        assert _cli("status", "--api", api, "--state-dir", str(tmp_path / "elsewhere")).returncode != 0
        assert _cli("kill", "reads-token", "--state-dir", str(state)).returncode == 0
        assert run.wait(60) == KILLED_EXIT, run.output[-3000:]
    finally:
        stop_scheduler(run)
