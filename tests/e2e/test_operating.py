"""Watching and steering a running job: the status page in a real headless browser (Debian's
chromium via Selenium), `tfmesos logs --follow`, `tfmesos restart`, progress, /metrics, TensorBoard.

One real job (the PSS example) serves every check, to keep the suite short. Its chief trains the
example's steps, then waits for a gate the test opens once every check is done: the job stays up
for as long as the checks take (however loaded the machine), without training thousands of steps
to last that long.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import sys
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.harness import (
    ROOT,
    TFMESOS,
    LineProcess,
    accuracy,
    eventually,
    run_scheduler,
    stop_scheduler,
    wait_gone,
    write_options,
)
from tests.e2e.test_jobs import PSS

pytestmark = pytest.mark.slow
STEPS = 400
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
SCREENSHOT = ROOT / "docs" / "status-page.png"


def this_checkouts_python(tmp_path: Path) -> Path:
    """job.python for the agents: this checkout's tfmesos in the executors and tasks too."""
    wrapper = tmp_path / "python.sh"
    wrapper.write_text(f'#!/bin/sh\nexport PYTHONPATH="{ROOT}${{PYTHONPATH:+:$PYTHONPATH}}"\n'
                       f'exec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


def get(address: str, path: str) -> bytes:
    with urllib.request.urlopen(f"http://{address}{path}", timeout=10) as resp:
        return resp.read()


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1280,900"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def row_texts(driver) -> dict[str, list[str]]:
    """The task table as the page shows it (read in one go: the page redraws rows as they change)."""
    return driver.execute_script(
        "return Object.fromEntries([...document.querySelectorAll('#tasks tbody tr')]"
        ".map(r => [r.dataset.task, [...r.cells].map(c => c.innerText)]))")


def click(driver, selector: str) -> bool:
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    try:
        driver.find_element(By.CSS_SELECTOR, selector).click()
        return True
    except StaleElementReferenceException:  # redrawn meanwhile: the caller's wait tries again
        return False


def test_watching_and_steering_a_running_job(tmp_path):
    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        pytest.fail("chromium and chromedriver are needed (make test installs Debian's chromium chromium-driver)")
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    gate = tmp_path / "checks-done"
    opts = write_options(tmp_path / "o.json", PSS, service={"name": "ops-e2e"}, tensorboard={"enabled": True},
                         job={"python": str(this_checkouts_python(tmp_path)),
                              "command": '$TFMESOS_PYTHON train.py && while [ ! -e "$GATE" ]; do sleep 0.2; done',
                              "env": [f"TRAIN_STEPS={STEPS}", "CHECKPOINT_EVERY=100", f"GATE={gate}"]})
    run = run_scheduler(opts)
    follow = None
    driver = None
    try:
        api = run.wait_for(r"status page on http://(\S+)/", 60).group(1)
        run.wait_for(r"progress chief:0 .*step [1-9]", 180)
        env = {**os.environ, "TFMESOS_API": api, "PYTHONPATH": str(ROOT)}
        follow = LineProcess(TFMESOS + ["logs", "worker:1", "--follow"], env=env)
        follow.wait_for(r"worker:1 serving on", 30)

        # TensorBoard answers HTTP while the job trains; the page links to it.
        board = eventually(lambda: json.loads(get(api, "/v1/status"))["tensorboard"], 60, "TensorBoard RUNNING")
        assert b"TensorBoard" in eventually(lambda: get(board, "/"), 90, "TensorBoard answering")

        driver = browser()
        driver.get(f"http://{api}/")
        # The page redraws every second: an element found may be replaced before it is read.
        from selenium.common.exceptions import StaleElementReferenceException

        wait = WebDriverWait(driver, 30, poll_frequency=0.2, ignored_exceptions=(StaleElementReferenceException,))
        wait.until(lambda d: len(row_texts(d)) == 5 and all(c[3] == "TASK_RUNNING" for c in row_texts(d).values()))
        assert set(row_texts(driver)) == {"chief:0", "ps:0", "worker:0", "worker:1", "tensorboard:0"}
        # Opened without #token=: no kill or restart to click, and a note on how to get the token.
        assert not driver.find_elements(By.CSS_SELECTOR, "button.restart-task")
        assert not driver.find_element(By.ID, "kill-job").is_displayed()
        assert "tfmesos kill ops-e2e" in driver.find_element(By.ID, "token-note").text
        wait.until(lambda d: "step" in d.find_element(By.ID, "progress-text").text)
        wait.until(lambda d: click(d, 'tr[data-task="chief:0"] button.show-log'))
        wait.until(lambda d: re.search(r"step \d+ loss", d.find_element(By.ID, "log").text))
        wait.until(lambda d: d.find_element(By.ID, "tensorboard-link").get_attribute("href") == f"http://{board}/")
        if os.environ.get("TFMESOS_SCREENSHOT"):
            SCREENSHOT.parent.mkdir(exist_ok=True)
            driver.save_screenshot(str(SCREENSHOT))

        # A restart asked for by a person: the page follows the state change, the job goes on.
        restart = LineProcess(TFMESOS + ["restart", "worker:1"], env=env)
        assert restart.wait(30) == 0, restart.output
        wait.until(lambda d: "(+1 asked)" in row_texts(d)["worker:1"][4])
        wait.until(lambda d: row_texts(d)["worker:1"][3] == "TASK_RUNNING")
        wait.until(lambda d: "worker:1: restart asked for by a person" in d.find_element(By.ID, "events").text)
        follow.wait_for(r"--- worker:1 relaunched as ops-e2e\.worker\.1\.\d+ ---", 60)

        status = json.loads(get(api, "/v1/status"))
        (w1,) = [t for t in status["tasks"] if (t["role"], t["index"]) == ("worker", 1)]
        assert (w1["restarts"], w1["requested_restarts"]) == (0, 1) and status["job_restarts"] == 0
        assert status["progress"]["total_steps"] == STEPS
        samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
                   for f in text_string_to_metric_families(get(api, "/metrics").decode()) for s in f.samples}
        assert samples[("tfmesos_tasks_relaunched_total", (("reason", "requested"), ("role", "worker")))] == 1
        assert samples[("tfmesos_offers_received_total", ())] >= 1
        assert samples[("tfmesos_last_step", ())] > 0

        # The relaunched worker:1 serving again, as --follow shows it; then the chief ends, and the job.
        eventually(lambda: follow.output.count("worker:1 serving on") == 2, 120, "the relaunched worker:1 serving")
        gate.touch()
        assert run.wait(300) == 0, run.output[-4000:]
        assert follow.wait(30) == 0, "--follow ends with the job"
    finally:
        if driver is not None:
            driver.quit()
        if follow is not None:
            follow.killpg()
        stop_scheduler(run)  # failed midway: stop the job, then the rest
    assert accuracy(run.output) >= 0.9
    assert follow.output.count("worker:1 serving on") == 2, follow.output
    assert not wait_gone("ops-e2e"), "nothing of the job (TensorBoard included) is left"
    with pytest.raises(OSError):
        get(board, "/")
