"""A finished job can still be looked at: its kept record (`tfmesos status NAME`, `tfmesos jobs`,
`tfmesos logs NAME ROLE:INDEX`), and with `--keep-serving` its API and status page, loss chart
included, checked in a real headless chromium.

One real training job (the PSS example) on a `tfmesos local-master` of the test's own, so that
its agents (and their sandboxes) outlive the run, as on a cluster.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.e2e.harness import (
    ROOT,
    TFMESOS,
    LineProcess,
    LocalMaster,
    accuracy,
    run_scheduler,
    stop_scheduler,
    wait_gone,
    write_options,
)
from tests.e2e.test_jobs import PSS
from tests.e2e.test_operating import CHROMEDRIVER, CHROMIUM, browser

pytestmark = pytest.mark.slow
NAME = "hist-e2e"


def get(address: str, path: str) -> bytes:
    with urllib.request.urlopen(f"http://{address}{path}", timeout=10) as resp:
        return resp.read()


def tfmesos(*args: str, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess, float]:
    """A tfmesos command as a user runs it, and how long it took."""
    started = time.monotonic()
    done = subprocess.run(TFMESOS + list(args), capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})
    return done, time.monotonic() - started


def chart(driver, svg_id: str) -> dict:
    return driver.execute_script(
        "const s = document.getElementById(arguments[0]);"
        "const line = s.querySelector('polyline');"
        "return {circles: s.querySelectorAll('circle.pt').length,"
        " line: line ? line.getAttribute('points').trim().split(/\\s+/).length : 0,"
        " shown: !document.getElementById('chart-box').hidden && s.getBoundingClientRect().width > 0};", svg_id)


def test_a_finished_job_is_kept_served_and_readable_after_its_scheduler_left(tmp_path: Path) -> None:
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.fail("chromium and chromedriver are needed (make test installs Debian's chromium chromium-driver)")
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    state = tmp_path / "state"
    master = LocalMaster(tmp_path / "master")
    opts = write_options(tmp_path / "o.json", PSS, service={"name": NAME},
                         job={"env": ["TRAIN_STEPS=600", "CHECKPOINT_EVERY=50"]})
    run = run_scheduler(opts, "--master", master.address, "--state-dir", str(state), "--keep-serving", "120")
    driver = follow = None
    try:
        api = run.wait_for(r"status page on http://(\S+)/", 60).group(1)
        run.wait_for(r"chief:0 \| step \d+ loss", 300)
        follow = LineProcess(TFMESOS + ["logs", "chief:0", "--follow"],
                             env={**os.environ, "TFMESOS_API": api, "PYTHONPATH": str(ROOT)})
        run.wait_for(r"status page stays on http://\S+/ for 120 s", 400)
        assert "job hist-e2e SUCCEEDED" in run.output, run.output[-3000:]

        # The finished job's API: its final status (the clock stopped at the end), chart data, logs.
        snap = json.loads(get(api, "/v1/status"))
        assert snap["phase"] == "SUCCEEDED" and snap["ended_at"] >= snap["started_at"]
        losses = [p for p in snap["series"] if p[2] is not None]
        assert len(losses) >= 3, snap["series"]
        assert snap["series"][-1][1] == snap["progress"]["step"] == 600, "the chart ends at the last report"
        log = json.loads(get(api, "/v1/logs/chief:0?tail=3"))
        assert "final test accuracy" in log["data"]

        # ... and its page in a real browser: final progress, events, the chief's log, the charts drawn.
        driver = browser()
        driver.get(f"http://{api}/?task=chief:0")
        wait = WebDriverWait(driver, 30, poll_frequency=0.2, ignored_exceptions=(StaleElementReferenceException,))
        wait.until(lambda d: d.find_element(By.ID, "phase").text == "SUCCEEDED")
        wait.until(lambda d: chart(d, "chart-loss")["shown"])
        loss_chart, rate_chart = chart(driver, "chart-loss"), chart(driver, "chart-rate")
        assert loss_chart["circles"] == loss_chart["line"] == len(losses), loss_chart
        assert rate_chart["circles"] >= 2, rate_chart
        assert "step 600 / 600" in driver.find_element(By.ID, "progress-text").text
        assert "succeeded: chief:0 finished" in driver.find_element(By.ID, "events").text
        wait.until(lambda d: "final test accuracy" in d.find_element(By.ID, "log").text)
        took = int(snap["ended_at"] - snap["started_at"])
        assert driver.find_element(By.ID, "elapsed").text == (f"{took // 60}m {took % 60}s" if took >= 60 else f"{took}s"), \
            "an ended job's clock stops at its end"

        served, _ = tfmesos("status", "--api", api)
        assert served.returncode == 0 and "ended " in served.stdout and "chief:0 finished" in served.stdout, served.stdout
        by_name, _ = tfmesos("status", NAME, "--state-dir", str(state))  # no --api: the run announced it
        assert f"job {NAME}  phase SUCCEEDED" in by_name.stdout, by_name.stdout + by_name.stderr

        # tfmesos kill ends the serving early; the run's code is still the job's.
        killed, _ = tfmesos("kill", "--api", api, "--state-dir", str(state))
        assert killed.returncode == 0, killed.stderr
        assert run.wait(60) == 0, run.output[-3000:]
        assert follow.wait(30) == 0, "--follow ends with the job"
        assert "final test accuracy" in follow.output.splitlines()[-1], "--follow prints to the last line"
    finally:
        if driver is not None:
            driver.quit()
        if follow is not None:
            follow.killpg()
        stop_scheduler(run)
    assert accuracy(run.output) >= 0.9
    assert not wait_gone(NAME)
    assert not list((state / "live").iterdir()), "the run withdrew where its API was"

    # The scheduler is gone. `status` answers from the kept record at once, even pointed at the
    # dead API (which it would otherwise retry for --connect-timeout, 30 s).
    where = ["--state-dir", str(state)]
    status, took = tfmesos("status", NAME, *where, env={"TFMESOS_API": api})
    assert status.returncode == 0, status.stderr
    assert took < 10, f"status took {took:.1f} s: it waited for the gone scheduler"
    out = status.stdout
    assert f"job {NAME}  SUCCEEDED: chief:0 finished" in out and "from its record" in out
    assert re.search(r"chief:0 +127\.0\.0\.1:\d+ +TASK_FINISHED +restarts 0 exit 0", out), out
    assert re.search(r"ps:0 +127\.0\.0\.1:\d+ +TASK_KILLED", out), out
    sandbox = re.search(r"chief:0 +(\S+) +(/\S+/executors/hist-e2e\.chief\.0\.\d+/runs/\S+)", out)
    assert sandbox and sandbox.group(1).startswith("127.0.0.1:"), out
    kept = json.loads(tfmesos("status", NAME, "--json", *where)[0].stdout)["end"]["logs"]
    assert "final test accuracy" in kept["chief:0"][-1]["tail"]["stdout"], "the end of the log is kept too"
    by_api, took = tfmesos("status", "--api", api, *where)  # no name: the record of what served there
    assert by_api.returncode == 0 and f"job {NAME}  SUCCEEDED" in by_api.stdout and took < 10, by_api.stderr

    jobs, _ = tfmesos("jobs", *where)
    assert jobs.returncode == 0, jobs.stderr
    row = re.search(rf"^{NAME} +SUCCEEDED +\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d +\S+ +4: .*1 finished", jobs.stdout, re.M)
    assert row, jobs.stdout
    line = next(line for line in jobs.stdout.splitlines() if line.startswith(NAME))
    assert "sandboxes on " in line and sandbox.group(1) in line and "/executors/" not in line, \
        "where the logs are: the agents, not a 200-character path"

    # Its logs: through the agent's files API while the agent runs ...
    logs, _ = tfmesos("logs", NAME, "chief:0", "--tail", "2", *where)
    assert logs.returncode == 0 and "final test accuracy" in logs.stdout, logs.stderr
    assert logs.stdout.count("\n") == 2 and "read from agent 127.0.0.1:" in logs.stderr
    # ... and from the sandbox on this disk once the agent is gone (the work dir stays).
    master.stop()
    logs, _ = tfmesos("logs", NAME, "chief:0", *where)
    assert logs.returncode == 0 and "final test accuracy" in logs.stdout, logs.stderr
    assert f"read from {sandbox.group(2)} on this machine" in logs.stderr
    errors, _ = tfmesos("logs", NAME, "worker:9", *where)
    assert errors.returncode == 1 and "not a task of job 'hist-e2e'" in errors.stderr and "chief:0" in errors.stderr
