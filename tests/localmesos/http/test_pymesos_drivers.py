"""A real pymesos MesosSchedulerDriver + a real MesosExecutorDriver subprocess."""
from __future__ import annotations

import json
import queue
import sys
from typing import Any

from pymesos import MesosSchedulerDriver, Scheduler, decode_data, encode_data

from tests.localmesos.sandbox_procs import EXECUTORS, assert_no_processes, processes_under
from tests.localmesos.scheduler_client import wait_until

EXECUTOR = EXECUTORS / "pymesos_executor.py"


class RecordingScheduler(Scheduler):
    def __init__(self) -> None:
        self.events: "queue.Queue[tuple[str, Any]]" = queue.Queue()

    def registered(self, driver, framework_id, master_info):  # noqa: N802 (pymesos API)
        self.events.put(("registered", framework_id))

    def resourceOffers(self, driver, offers):  # noqa: N802
        self.events.put(("offers", offers))

    def statusUpdate(self, driver, status):  # noqa: N802
        self.events.put(("update", status))

    def frameworkMessage(self, driver, executor_id, agent_id, data):  # noqa: N802
        self.events.put(("message", decode_data(data).decode()))

    def executorLost(self, driver, executor_id, agent_id, status):  # noqa: N802
        self.events.put(("executor_lost", (executor_id, status)))

    def error(self, driver, message):
        self.events.put(("error", message))

    def wait(self, kind: str, timeout: float = 20.0, check=None):  # type: ignore[no-untyped-def]
        while True:
            got, value = self.events.get(timeout=timeout)
            assert got != "error", value
            if got == kind and (check is None or check(value)):
                return value


def custom_task(offer: dict[str, Any], task_id: str, finish_on: str) -> dict[str, Any]:
    def scalar(name: str, value: float) -> dict[str, Any]:
        return {"name": name, "type": "SCALAR", "scalar": {"value": value}}

    return {
        "name": task_id,
        "task_id": {"value": task_id},
        "agent_id": offer["agent_id"],
        "resources": [scalar("cpus", 0.5), scalar("mem", 64)],
        "data": encode_data(json.dumps({"finish_on": finish_on}).encode()),
        "executor": {
            "executor_id": {"value": "echo-executor"},
            "name": "echo",
            "command": {"value": f"{sys.executable} {EXECUTOR}"},
            "resources": [scalar("cpus", 0.1), scalar("mem", 32)],
        },
    }


def test_pymesos_scheduler_and_executor_end_to_end(make_master):
    master = make_master(agents=2)
    scheduler = RecordingScheduler()
    driver = MesosSchedulerDriver(scheduler, {"user": "", "name": "pymesos-e2e"}, master.address)
    driver.start()
    try:
        framework_id = scheduler.wait("registered")["value"]
        offers = scheduler.wait("offers")
        offer = offers[0]
        driver.launchTasks(offer["id"], [custom_task(offer, "task-1", "finish")])
        running = scheduler.wait("update", check=lambda s: s["state"] == "TASK_RUNNING")
        assert running["task_id"] == {"value": "task-1"} and running["source"] == "SOURCE_EXECUTOR"

        # Framework messages both ways, then the executor finishes the task on request.
        driver.sendFrameworkMessage({"value": "echo-executor"}, offer["agent_id"], encode_data(b"ping"))
        assert scheduler.wait("message") == "pong:ping"
        driver.sendFrameworkMessage({"value": "echo-executor"}, offer["agent_id"], encode_data(b"finish"))
        assert scheduler.wait("message") == "pong:finish"
        finished = scheduler.wait("update", check=lambda s: s["task_id"]["value"] == "task-1")
        assert finished["state"] == "TASK_FINISHED" and finished["message"] == "finished on finish"

        # pymesos acknowledged implicitly: the master forgets the task, the executor lives on.
        state = wait_until(lambda: (lambda s: s if s["frameworks"][0]["completed_tasks"] else None)(
            master.state()), message="task completion")
        framework = state["frameworks"][0]
        assert framework["id"] == framework_id and framework["tasks"] == []
        (executor,) = framework["executors"]
        assert executor["executor_id"] == "echo-executor"
        assert (master.work_dir / "agents").as_posix() in executor["directory"]
        assert processes_under(master.work_dir), "the executor outlives its task"
    finally:
        driver.stop()  # failover=False: TEARDOWN
        driver.join()

    assert_no_processes(master.work_dir)
    state = master.state()
    assert state["frameworks"] == []
    assert state["completed_frameworks"][0]["id"] == framework_id


def test_pymesos_failover_driver_reregisters_and_keeps_tasks(make_master):
    master = make_master()
    first = RecordingScheduler()
    info = {"user": "", "name": "pymesos-failover", "failover_timeout": 30}
    driver = MesosSchedulerDriver(first, dict(info), master.address)
    driver.start()
    framework_id = first.wait("registered")["value"]
    offer = first.wait("offers")[0]
    driver.launchTasks(offer["id"], [custom_task(offer, "task-1", "never")])
    first.wait("update", check=lambda s: s["state"] == "TASK_RUNNING")
    driver.stop(failover=True)  # no TEARDOWN: the framework may fail over
    driver.join()

    second = RecordingScheduler()
    reregistered: "queue.Queue[bool]" = queue.Queue()
    second.reregistered = lambda driver, master_info: reregistered.put(True)  # type: ignore[method-assign]
    driver = MesosSchedulerDriver(second, {**info, "id": {"value": framework_id}}, master.address)
    driver.start()
    try:
        assert reregistered.get(timeout=20)
        driver.reconcileTasks([])
        status = second.wait("update")
        assert (status["task_id"]["value"], status["state"], status["reason"]) == \
            ("task-1", "TASK_RUNNING", "REASON_RECONCILIATION")
        assert "uuid" not in status
    finally:
        driver.stop()
        driver.join()
    assert_no_processes(master.work_dir)
