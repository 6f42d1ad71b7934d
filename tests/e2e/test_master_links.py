"""On the embedded master, the status page's "Mesos" link and each task's sandbox link open pages
that answer (the master's own page and sandbox browser), followed in a real headless chromium."""
from __future__ import annotations

import json
import os
import signal

import pytest

from tests.e2e.harness import run_scheduler
from tests.e2e.test_operating import CHROMEDRIVER, CHROMIUM, browser

pytestmark = pytest.mark.slow


def test_the_status_pages_mesos_and_sandbox_links_answer(tmp_path):
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.fail("chromium and chromedriver are needed (make test installs Debian's chromium chromium-driver)")
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    options = tmp_path / "o.json"
    options.write_text(json.dumps({"service": {"name": "links"},
                                   "job": {"command": "echo hello-from-the-sandbox; exec sleep 300"},
                                   "roles": {"chief": {"count": 1, "cpus": 0.2, "mem": 128}}}))
    run = run_scheduler(options)
    driver = None
    try:
        page = run.wait_for(r"status page on (http://\S+/)", 60).group(1)
        run.wait_for(r"chief:0 TASK_RUNNING", 60)
        driver = browser()
        wait = WebDriverWait(driver, 30)
        driver.get(page)
        sandbox = wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#tasks td.agent a"))[0].get_attribute("href")
        mesos = driver.find_element(By.LINK_TEXT, "Mesos").get_attribute("href")

        driver.get(mesos)
        assert driver.title == "tfmesos local-master"
        assert "Agents" in driver.find_element(By.TAG_NAME, "body").text

        driver.get(sandbox)  # http://MASTER/#/agents/A/frameworks/F/executors/E, as into the Mesos UI
        wait.until(lambda d: "/sandbox/" in d.current_url)
        wait.until(lambda d: d.find_elements(By.LINK_TEXT, "stdout")).pop().click()
        wait.until(lambda d: "hello-from-the-sandbox" in d.find_element(By.TAG_NAME, "body").text)
    finally:
        if driver is not None:
            driver.quit()
        run.kill(signal.SIGTERM)
        run.wait(60)
