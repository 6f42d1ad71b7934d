"""The scheduler's shell (JobShell, through its Mesos adapter) driven by a fake of pymesos' driver: it persists before
Mesos hears of a task, adopts its tasks after a restart, and never launches a task id twice."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tfmesos.core.job.job import Job
from tfmesos.mesos.taskinfo import ExecutorSettings
from tfmesos.options.load import resolve_options
from tfmesos.mesos.driver import stop_driver
from tfmesos.scheduler.job_shell import JobShell
from tfmesos.options.jobspec import job_spec_from_options
from tfmesos.store.format import record
from tfmesos.store.job_store import JobStore
from tfmesos.store.state_store import DirStore

OPTIONS = resolve_options({"service": {"name": "shell"}, "job": {"command": "python train.py"},
                           "roles": {"ps": {"count": 1, "cpus": 0.5, "mem": 256},
                                     "worker": {"count": 2, "cpus": 0.5, "mem": 256}}})
SPEC = job_spec_from_options(OPTIONS)


class FakeDriver:
    """pymesos' driver as the scheduler uses it: every call recorded with the state on disk then."""

    def __init__(self, store: DirStore, framework_id: str = "F-1") -> None:
        self.store, self.framework_id = store, framework_id
        self.calls: list[tuple[str, tuple]] = []
        self.launched: list[str] = []
        self.on_disk_at_launch: list[set[str]] = []

    def launchTasks(self, offer_ids: list, infos: list[dict], filters: dict) -> None:  # noqa: N802
        saved = self.store.load() or {"job": {"task_ids": {}}}
        self.on_disk_at_launch.append(set(saved["job"]["task_ids"]))
        self.launched += [i["task_id"]["value"] for i in infos]
        self.calls.append(("launchTasks", (offer_ids,)))

    def stop(self, failover: bool = False) -> None:
        self.on_disk_at_stop = self.store.load()
        self.calls.append(("stop", (failover,)))

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: self.calls.append((name, args))


def _offer(i: int) -> dict[str, Any]:
    return {"id": {"value": f"O{i}"}, "agent_id": {"value": f"A{i}"}, "hostname": f"h{i}", "resources": [
        {"name": "cpus", "type": "SCALAR", "scalar": {"value": 4}},
        {"name": "mem", "type": "SCALAR", "scalar": {"value": 8192}},
        {"name": "ports", "type": "RANGES", "ranges": {"range": [{"begin": 31000 + 10 * i, "end": 31009 + 10 * i}]}}]}


def _status(task_id: str, agent: str, state: str) -> dict[str, Any]:
    return {"task_id": {"value": task_id}, "agent_id": {"value": agent}, "state": state, "uuid": "dXVpZA=="}


def _scheduler(store: DirStore, job: Job, keep_finished: bool = False) -> JobShell:
    return JobShell(job, ExecutorSettings(python="python3"), JobStore(store, OPTIONS, keep_finished=keep_finished),
                    clock=lambda: 10.0)


def test_tasks_are_on_disk_before_mesos_hears_of_them(tmp_path: Path) -> None:
    store = DirStore(tmp_path, "shell")
    driver, sched = FakeDriver(store), _scheduler(store, Job.new(SPEC, 0.0))
    sched.mesos.registered(driver, {"value": "F-1"}, {"hostname": "m", "port": 5050})
    sched.mesos.resourceOffers(driver, [_offer(1), _offer(2)])
    assert len(driver.launched) == 3 and len(set(driver.launched)) == 3, "the whole gang, each id once"
    for on_disk in driver.on_disk_at_launch:
        assert set(driver.launched) <= on_disk


def test_a_restarted_scheduler_reconciles_adopts_and_launches_nothing_again(tmp_path: Path) -> None:
    store = DirStore(tmp_path, "shell")
    first = FakeDriver(store)
    sched = _scheduler(store, Job.new(SPEC, 0.0))
    sched.mesos.registered(first, {"value": "F-1"}, {"hostname": "m", "port": 5050})
    sched.mesos.resourceOffers(first, [_offer(1), _offer(2)])
    agents = {info_id: sched.attempt_agents[info_id] for info_id in first.launched}

    # The scheduler dies; a new one loads the record and re-subscribes with the same framework id.
    saved = store.load()
    assert saved is not None and saved["framework_id"] == "F-1"
    again = FakeDriver(store)
    resumed = _scheduler(store, Job.from_dict(SPEC, saved["job"]))
    resumed.mesos.reregistered(again, {"hostname": "m", "port": 5050})
    reconciled = [args[0] for name, args in again.calls if name == "reconcileTasks"]
    assert reconciled and {t["task_id"]["value"] for t in reconciled[0]} == set(first.launched)

    for task_id, agent in agents.items():  # Mesos answers: they all still run
        resumed.mesos.statusUpdate(again, _status(task_id, agent, "TASK_RUNNING"))
    resumed.mesos.resourceOffers(again, [_offer(3), _offer(4)])
    assert again.launched == [], "adopted tasks are never launched a second time"
    assert {t.state for t in resumed.snapshot().tasks} == {"TASK_RUNNING"}
    assert json.loads(Path(store.where).read_text())["framework_id"] == "F-1"


def test_the_executor_builds_the_tasks_environment_from_payload_and_clusterspec(tmp_path: Path) -> None:
    from tfmesos.core.actions import TaskLaunch
    from tfmesos.executor.executor import TFExecutor
    from tfmesos.mesos.taskinfo import task_payload
    from tfmesos.core.spec import TaskKey

    key = TaskKey("worker", 1)
    role = SPEC.role("worker")
    assert role is not None
    executor = TFExecutor()
    executor.payload = task_payload(SPEC, TaskLaunch(key, "shell.worker.1.3", 31011, role.demand, 2), "py3")
    cluster = {"ps": ["h1:31000"], "worker": ["h1:31001", "h2:31011"]}
    env = executor._environment(key, cluster, str(tmp_path))
    assert json.loads(env["TF_CONFIG"]) == {"cluster": cluster, "task": {"type": "worker", "index": 1}}
    assert (env["TFMESOS_JOB_NAME"], env["TFMESOS_TASK_INDEX"], env["TFMESOS_PORT"]) == ("worker", "1", "31011")
    assert env["TFMESOS_RESTART_COUNT"] == "2" and env["TFMESOS_PYTHON"] == "py3"
    assert env["TMPDIR"] == str(tmp_path / "tmp") and (tmp_path / "tmp").is_dir()
    assert env["TFMESOS_CLUSTERSPEC_FILE"] == str(tmp_path / "clusterspec.json")
    # The planned-stop contract: where the notice comes, and no GCP metadata probe.
    assert env["GCE_METADATA_IP"] == "127.0.0.1:0" and env["TFMESOS_NOTICE_FILE"].endswith("/notice.json")
    # douban/tfmesos 0.0.10's variables, which its users' scripts may read.
    assert (env["TFMESOS_PS_HOSTS"], env["TFMESOS_WORKER_HOSTS"], env["TFMESOS_DISTRIBUTED"]) == (
        "h1:31000", "h1:31001,h2:31011", "1")


def _run_to_success(store: DirStore, keep_finished: bool) -> tuple[JobShell, FakeDriver]:
    """A job launched, running, then worker:0 exits 0 and its peers are killed: the job is over."""
    driver, sched = FakeDriver(store), _scheduler(store, Job.new(SPEC, 0.0), keep_finished)
    sched.mesos.registered(driver, {"value": "F-1"}, {"hostname": "m", "port": 5050})
    sched.mesos.resourceOffers(driver, [_offer(1), _offer(2)])
    for task_id in driver.launched:
        sched.mesos.statusUpdate(driver, _status(task_id, sched.attempt_agents[task_id], "TASK_RUNNING"))
    worker0 = next(t for t in driver.launched if ".worker.0." in t)
    sched.mesos.statusUpdate(driver, _status(worker0, sched.attempt_agents[worker0], "TASK_FINISHED"))
    assert not sched.done.is_set(), "the others still run"
    for task_id in driver.launched:
        if task_id != worker0:
            sched.mesos.statusUpdate(driver, _status(task_id, sched.attempt_agents[task_id], "TASK_KILLED"))
    assert sched.done.is_set() and sched.result is not None and sched.result.succeeded
    stop_driver(sched, driver, failover=False)  # what the runner does next: tear the framework down
    return sched, driver


def test_a_kept_job_is_recorded_finished_before_its_framework_is_torn_down(tmp_path: Path) -> None:
    """Under Marathon: a scheduler restarted between the end and the teardown must find the job
    finished (and serve its status), not resume a framework Mesos is about to remove."""
    _, driver = _run_to_success(DirStore(tmp_path, "shell"), keep_finished=True)
    assert driver.calls[-2] == ("stop", (False,))
    saved = driver.on_disk_at_stop
    assert saved is not None and saved["finished"] is True and saved["job"]["phase"] == "SUCCEEDED"
    assert saved["framework_id"] == "F-1" and set(saved) == set(record("F-1", "", None, {}))


def test_a_job_not_kept_is_recorded_over_but_not_finished(tmp_path: Path) -> None:
    """Outside Marathon the runner clears the record after the teardown; until then it says how the
    job ended, not that it holds the name."""
    _, driver = _run_to_success(DirStore(tmp_path, "shell"), keep_finished=False)
    saved = driver.on_disk_at_stop
    assert saved is not None and saved["finished"] is False and saved["job"]["phase"] == "SUCCEEDED"


def test_a_task_s_end_is_appended_to_the_journal_and_a_restart_reads_it(tmp_path: Path) -> None:
    options = resolve_options({"service": {"name": "journal"}, "job": {"command": "true"},
                               "roles": {"worker": {"count": 20, "cpus": 0.5, "mem": 64, "restart_policy": "Never"}},
                               "policies": {"success": "all_workers"}})
    spec = job_spec_from_options(options)
    store = DirStore(tmp_path, "journal")
    sched = JobShell(Job.new(spec, 0.0), ExecutorSettings(python="python3"), JobStore(store, options), clock=lambda: 10.0)
    driver = FakeDriver(store)
    sched.mesos.registered(driver, {"value": "F-1"}, {"hostname": "m", "port": 5050})
    sched.mesos.resourceOffers(driver, [_offer(i) for i in range(8)])
    assert len(driver.launched) == 20
    whole = Path(store.where).read_bytes()
    for task_id in driver.launched:
        sched.mesos.statusUpdate(driver, _status(task_id, sched.attempt_agents[task_id], "TASK_RUNNING"))
    ended = driver.launched[:19]
    for task_id in ended:
        sched.mesos.statusUpdate(driver, _status(task_id, sched.attempt_agents[task_id], "TASK_FINISHED"))
    assert Path(store.where).read_bytes() == whole, "a task's end does not rewrite every task"
    assert len(store.journal.read_bytes().splitlines()) == len(ended)
    restarted = Job.from_dict(spec, store.load()["job"])
    states = {rec.task_id: rec.state for rec in restarted.tasks.values()}
    assert [states[t] for t in ended] == ["TASK_FINISHED"] * len(ended)
    assert states[driver.launched[19]] == "TASK_STAGING"  # RUNNING is learnt again by reconciling
    assert restarted.events == sched.job.events[-200:] and restarted.phase == sched.job.phase


def test_a_reconciliation_answer_is_shown_once_though_explicit_and_implicit_reconciliation_both_answer(
        tmp_path: Path) -> None:
    from tfmesos.scheduler.job_shell import Hooks

    store = DirStore(tmp_path, "shell")
    shown: list[str] = []
    sched = JobShell(Job.new(SPEC, 0.0), ExecutorSettings(python="python3"), JobStore(store, OPTIONS),
                     hooks=Hooks(event=shown.append), clock=lambda: 10.0)
    driver = FakeDriver(store)
    sched.mesos.registered(driver, {"value": "F-1"}, {"hostname": "m", "port": 5050})
    sched.mesos.resourceOffers(driver, [_offer(1), _offer(2)])
    agents = dict(sched.attempt_agents)
    sched.mesos.reregistered(driver, {"hostname": "m", "port": 5050})  # a master failover
    for _ in range(2):  # the answer to Reconcile(live), then to Reconcile(()) (Mesos answers both)
        for task_id, agent in agents.items():
            sched.mesos.statusUpdate(driver, {**_status(task_id, agent, "TASK_RUNNING"), "reason": "REASON_RECONCILIATION"})
    said = [line for line in shown if "REASON_RECONCILIATION" in line]
    assert len(said) == len(agents) == len(set(said)), said
    sched.mesos.reregistered(driver, {"hostname": "m", "port": 5050})  # the next failover shows them again
    for task_id, agent in agents.items():
        sched.mesos.statusUpdate(driver, {**_status(task_id, agent, "TASK_RUNNING"), "reason": "REASON_RECONCILIATION"})
    assert len([line for line in shown if "REASON_RECONCILIATION" in line]) == 2 * len(agents)


def test_a_task_s_failure_is_one_line_on_the_console_and_the_same_in_the_events(tmp_path: Path) -> None:
    """One TASK_FAILED: one line, from the one place that composes it (core/state/notices.py); it
    was two, the shell's own and the core's event."""
    from tfmesos.scheduler.job_shell import Hooks

    options = resolve_options({**OPTIONS, "roles": {"worker": {"count": 1, "cpus": 0.5, "mem": 256,
                                                               "restart_policy": "OnFailure"}}})
    store = DirStore(tmp_path, "shell")
    shown: list[str] = []
    sched = JobShell(Job.new(job_spec_from_options(options), 0.0), ExecutorSettings(python="python3"),
                     JobStore(store, options), hooks=Hooks(event=shown.append), clock=lambda: 10.0)
    driver = FakeDriver(store)
    sched.mesos.registered(driver, {"value": "F-1"}, {"hostname": "m", "port": 5050})
    sched.mesos.resourceOffers(driver, [_offer(1)])
    (task_id,) = driver.launched
    sched.mesos.statusUpdate(driver, _status(task_id, "A1", "TASK_RUNNING"))
    sched.mesos.statusUpdate(driver, {**_status(task_id, "A1", "TASK_FAILED"), "reason": "REASON_EXECUTOR_TERMINATED",
                                      "message": "Executor terminated"})
    said = [line for line in shown if "TASK_FAILED" in line]
    assert said == ["worker:0 TASK_FAILED (REASON_EXECUTOR_TERMINATED) (Executor terminated): relaunch #1 in 1.0s "
                    "with the whole job from its checkpoint"]  # a collective job: its one worker is all of it
    assert said[0] in sched.snapshot().events, "the page and the record show the same line"
    assert "worker:0 TASK_RUNNING" in shown


def test_health_fails_while_a_callback_wedges_the_loop_and_recovers_after(tmp_path: Path) -> None:
    """/v1/health answers from the HTTP thread, which lives on through a wedge: it must say
    whether the loop that drives the job still turns (Marathon restarts a scheduler that fails it)."""
    import threading
    import urllib.error
    import urllib.request

    from tests.e2e.harness import eventually
    from tfmesos.scheduler.http_api import ApiServer, Operations
    from tfmesos.scheduler.job_shell import Hooks

    release, wedged = threading.Event(), threading.Event()

    def event(text: str) -> None:
        if "registered as framework" in text:  # a callback that blocks, under the job's lock
            wedged.set()
            release.wait(30)

    def health() -> tuple[int, dict]:
        try:
            with urllib.request.urlopen(f"http://{api.address}/v1/health", timeout=5) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    store = DirStore(tmp_path, "shell")
    sched = JobShell(Job.new(SPEC, 0.0), ExecutorSettings(python="python3"), JobStore(store, OPTIONS),
                     hooks=Hooks(event=event))
    sched.loop_stale_seconds = 1.0
    api = ApiServer(sched.snapshot, lambda: None, lambda: None, ops=Operations(health=sched.loop_health))
    api.start()
    loop = threading.Thread(target=sched.run_until_done, daemon=True)
    loop.start()
    try:
        eventually(lambda: sched.loop_turned is not None, 10, "the loop's first turn")
        assert health() == (200, {"healthy": True})
        subscriber = threading.Thread(target=sched.mesos.registered,
                                      args=(FakeDriver(store), {"value": "F-1"}, {"hostname": "m", "port": 5050}),
                                      daemon=True)
        subscriber.start()
        assert wedged.wait(10)
        code, body = eventually(lambda: (lambda h: h if h[0] == 503 else None)(health()), 10, "health to fail")
        assert body["healthy"] is False and "has not turned for" in body["reason"], body
        release.set()
        subscriber.join(10)
        eventually(lambda: health()[0] == 200, 10, "health to recover once the callback returns")
    finally:
        release.set()
        sched.request_stop("test over")
        loop.join(10)
        api.stop()
