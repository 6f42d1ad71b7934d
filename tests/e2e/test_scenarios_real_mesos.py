"""The scenarios of test_scenarios.py against a real Apache Mesos (see real_mesos.py): same jobs,
same assertions as on the embedded master. And the status page's task link into the real
master's web UI, on to the task's sandbox (test_master_links.py follows it on the embedded one)."""
from __future__ import annotations

import pytest

from tests.e2e.harness import run_scheduler, write_options
from tests.e2e.real_mesos import RealMesos
from tests.e2e.test_scenarios import SCENARIOS, run_gang, scenario_id

pytestmark = pytest.mark.slow

AGENT = "cpus:4;mem:8192;disk:4000;ports:[31000-31999]"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=scenario_id)
def test_scenario_on_real_mesos(tmp_path, scenario):
    with RealMesos(tmp_path / "mesos", [AGENT]) as master:
        scenario(tmp_path, master)


def test_a_100_task_gang_on_three_agents_all_running_on_real_mesos(tmp_path):
    agents = [f"cpus:4;mem:4096;disk:4000;ports:[{31000 + 1000 * i}-{31999 + 1000 * i}]" for i in range(3)]
    with RealMesos(tmp_path / "mesos", agents) as master:
        seconds = run_gang(tmp_path, master)
    print(f"100-task gang on 3 real Mesos agents: all RUNNING {seconds:.1f} s after registration")


def test_status_page_links_to_the_tasks_sandbox_in_the_real_web_ui(tmp_path):
    """The page's agent link opens the task's executor in the master's web UI, whose Sandbox link
    lists the task's stdout and stderr (a real browser; only a real master has the web UI)."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.e2e.test_operating import browser

    gate = tmp_path / "go"
    opts = write_options(tmp_path / "o.json", service={"name": "webui-links"},
                         job={"command": 'echo started; while [ ! -e "$GATE" ]; do sleep 0.2; done',
                              "env": [f"GATE={gate}"]},
                         roles={"chief": {"count": 1, "cpus": 0.1, "mem": 64}})
    with RealMesos(tmp_path / "mesos", [AGENT], master_flags=["--webui_dir=/usr/local/share/mesos/webui"]) as master:
        run = run_scheduler(opts, "--master", master.address, "--state-dir", str(tmp_path / "state"))
        driver = None
        try:
            api = run.wait_for(r"status page on http://(\S+)/", 60).group(1)
            run.wait_for(r"chief:0 TASK_RUNNING", 60)
            driver = browser()
            wait = WebDriverWait(driver, 60, poll_frequency=0.2, ignored_exceptions=(StaleElementReferenceException,))
            driver.get(f"http://{api}/")
            link = 'tr[data-task="chief:0"] a[title="the task\'s sandbox in the Mesos UI"]'
            href = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, link).get_attribute("href"))
            assert href.startswith(f"http://{master.address}/#/agents/"), href
            driver.get(href)
            executor_id = href.rsplit("/", 1)[1]
            wait.until(lambda d: executor_id in d.find_element(By.CSS_SELECTOR, "ol.breadcrumb").text)
            wait.until(lambda d: d.find_element(By.LINK_TEXT, "Sandbox")).click()
            wait.until(lambda d: {"stdout", "stderr"} <= {a.text for a in d.find_elements(By.CSS_SELECTOR, "td a")})
            gate.touch()
            assert run.wait(60) == 0, run.output[-3000:]
        finally:
            if driver is not None:
                driver.quit()
            run.killpg()
