"""tfmesos' own scheduler driver (tfmesos/mesos/scheduler_driver.py) against the embedded master:
every call tfmesos sends, failover to a second driver, a refused authentication, a master that
stops sending heartbeats, a redirect to the leader. Its decisions are unit-tested in
test_subscription.py; the same scenarios against real Mesos 1.12 are in
tests/e2e/test_driver_real_mesos.py."""
from __future__ import annotations

import json
import signal
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import pytest

from localmesos import LocalMaster
from tests.e2e.harness import LocalMaster as MasterProcess, eventually
from tfmesos.mesos.scheduler_driver import SchedulerDriver

pytestmark = pytest.mark.slow

FRAMEWORK = {"user": "root", "name": "driver-test", "failover_timeout": 60, "checkpoint": True,
             "capabilities": [{"type": "MULTI_ROLE"}], "roles": ["*"]}


class Recorder:
    """A scheduler in pymesos' callback interface that keeps every callback and its arguments."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self._cond = threading.Condition()

    def __getattr__(self, name: str) -> Callable[..., None]:
        if name.startswith("_"):
            raise AttributeError(name)

        def record(driver: Any, *args: Any) -> None:
            with self._cond:
                self.calls.append((name, args))
                self._cond.notify_all()
        return record

    def named(self, name: str) -> list[tuple[Any, ...]]:
        with self._cond:
            return [args for called, args in self.calls if called == name]

    def wait(self, name: str, test: Callable[[tuple[Any, ...]], bool] = lambda args: True,
             timeout: float = 30.0) -> tuple[Any, ...]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for called, args in self.calls:
                    if called == name and test(args):
                        return args
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no {name} in {timeout} s: {[c for c, _ in self.calls]}")
                self._cond.wait(left)

    def updates(self, task_id: str) -> list[str]:
        return [args[0]["state"] for args in self.named("statusUpdate") if args[0]["task_id"]["value"] == task_id]


def _task(offer: dict[str, Any], task_id: str, command: str) -> dict[str, Any]:
    return {"name": task_id, "task_id": {"value": task_id}, "agent_id": offer["agent_id"],
            "resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": 0.1}},
                          {"name": "mem", "type": "SCALAR", "scalar": {"value": 32}}],
            "command": {"value": command}}


def _framework(master: Any, framework_id: str) -> dict[str, Any] | None:
    state = master.state()
    return next((f for f in state["frameworks"] + state.get("completed_frameworks", []) if f["id"] == framework_id), None)


@pytest.fixture
def master(tmp_path):
    m = LocalMaster(work_dir=tmp_path / "master", agents=1, allocation_interval=0.2).start()
    yield m
    m.stop()


def test_every_call_tfmesos_sends_reaches_the_master(master: LocalMaster) -> None:
    every_call(master)


def every_call(master: Any) -> None:
    """``master``: anything with ``address`` and ``state()`` (the embedded master, a real one)."""
    sched = Recorder()
    driver = SchedulerDriver(sched, FRAMEWORK, master.address)
    driver.start()
    try:
        framework_id, master_info = sched.wait("registered")
        assert framework_id["value"] == driver.framework_id and driver.connected and driver.stream_id
        assert f"{master_info['hostname']}:{master_info['port']}" == master.address
        (offers,) = sched.wait("resourceOffers")
        offer = offers[0]
        driver.launchTasks([offer["id"]], [_task(offer, "quick", "true")], {"refuse_seconds": 0.2})
        # RUNNING and FINISHED come with a uuid: acknowledged, else the agent would send them again.
        sched.wait("statusUpdate", lambda a: a[0]["state"] == "TASK_FINISHED" and a[0]["task_id"]["value"] == "quick")
        eventually(lambda: not _framework(master, driver.framework_id)["tasks"], 30, "the finished task acknowledged")
        assert sched.updates("quick").count("TASK_FINISHED") == 1

        (offers,) = sched.wait("resourceOffers", lambda a: a[0][0]["id"] != offer["id"])
        offer = offers[0]
        driver.launchTasks(offer["id"], [_task(offer, "long", "sleep 300")])
        sched.wait("statusUpdate", lambda a: a[0]["state"] == "TASK_RUNNING" and a[0]["task_id"]["value"] == "long")
        driver.reconcileTasks([])  # implicit: the master answers for every task it knows
        sched.wait("statusUpdate", lambda a: a[0].get("reason") == "REASON_RECONCILIATION")
        driver.suppressOffers()
        outstanding = [o["id"] for args in sched.named("resourceOffers") for o in args[0]]
        driver.declineOffer(outstanding, {"refuse_seconds": 0})  # without SUPPRESS, offered again next round
        seen = len(sched.named("resourceOffers"))
        with pytest.raises(AssertionError):  # several allocation rounds without an offer
            sched.wait("resourceOffers", lambda a: len(sched.named("resourceOffers")) > seen, timeout=3.0)
        driver.reviveOffers()
        sched.wait("resourceOffers", lambda a: len(sched.named("resourceOffers")) > seen)
        offered = sched.named("resourceOffers")[-1][0][0]
        driver.declineOffer([offered["id"]], {"refuse_seconds": 60})
        eventually(lambda: not _framework(master, driver.framework_id)["offers"], 30, "DECLINE")
        driver.sendFrameworkMessage({"value": "long"}, offered["agent_id"], "aGk=")  # a command task: dropped quietly
        driver.acceptInverseOffers([{"value": "none"}])  # no maintenance here: accepted, nothing to do
        driver.declineInverseOffer([{"value": "none"}])
        driver.killTask({"value": "long"})
        sched.wait("statusUpdate", lambda a: a[0]["state"] == "TASK_KILLED")
    finally:
        driver.stop()  # TEARDOWN
        driver.join()
    assert not driver.connected
    completed = [f["id"] for f in master.state().get("completed_frameworks", [])]
    assert driver.framework_id in completed, "stop() without failover tears the framework down"
    assert not sched.named("error") and not sched.named("disconnected")


def test_a_second_driver_fails_over_to_the_framework_and_its_task(master: LocalMaster) -> None:
    failover(master)


def failover(master: Any) -> None:
    first = Recorder()
    driver = SchedulerDriver(first, FRAMEWORK, master.address)
    driver.start()
    try:
        first.wait("registered")
        offer = first.wait("resourceOffers")[0][0]
        driver.launchTasks([offer["id"]], [_task(offer, "kept", "sleep 300")])
        first.wait("statusUpdate", lambda a: a[0]["state"] == "TASK_RUNNING")
    finally:
        driver.stop(failover=True)  # the scheduler goes, its framework and task stay
        driver.join()
    framework_id = driver.framework_id
    # The master deactivates it when it reads the stream's end: on its own loop, after join() here.
    eventually(lambda: _framework(master, framework_id)["active"] is False, 30, "the framework inactive")

    second = Recorder()
    successor = SchedulerDriver(second, {**FRAMEWORK, "id": {"value": framework_id}}, master.address)
    successor.start()
    try:
        (master_info,) = second.wait("reregistered")  # pymesos' rule: given an id, it re-registers
        assert successor.framework_id == framework_id and not second.named("registered")
        successor.reconcileTasks([{"task_id": {"value": "kept"}}])
        second.wait("statusUpdate", lambda a: a[0]["task_id"]["value"] == "kept" and a[0]["state"] == "TASK_RUNNING")
        assert _framework(master, framework_id)["active"] is True
    finally:
        successor.stop()
        successor.join()
    eventually(lambda: any(t["state"] == "TASK_KILLED" for t in _framework(master, framework_id)["completed_tasks"]),
               30, "the teardown to kill the kept task")


def test_refused_credentials_end_the_driver_with_the_reason_and_no_retry(tmp_path) -> None:
    master = LocalMaster(work_dir=tmp_path / "master", agents=1, credentials={"team-a": "right"}).start()
    try:
        refused_credentials(master)
    finally:
        master.stop()


def refused_credentials(master: Any) -> None:
    """``master`` knows the principal team-a with the secret "right"."""
    sched = Recorder()
    driver = SchedulerDriver(sched, {**FRAMEWORK, "principal": "team-a"}, master.address,
                             principal="team-a", secret="wrong")
    driver.start()
    (message,) = sched.wait("error")
    driver.join(10)  # the driver ends by itself: nothing to retry
    assert not driver.running and driver.stopped
    assert "HTTP 401" in message and "wrong" not in message
    assert not sched.named("registered") and not master.state()["frameworks"]
    driver.stop()

    ok = Recorder()
    good = SchedulerDriver(ok, {**FRAMEWORK, "principal": "team-a"}, master.address, principal="team-a",
                           secret="right")
    good.start()
    ok.wait("registered")
    good.stop()
    good.join()


def test_a_master_that_stops_sending_heartbeats_is_left_and_found_again(tmp_path) -> None:
    """SIGSTOP: the TCP connection stays open, no heartbeat comes. After five missed ones the
    driver counts the stream dead and subscribes again (with the same id) once the master is back."""
    process = MasterProcess(tmp_path / "master", agents=1, extra=["--heartbeat-interval", "0.5"])
    try:
        silent_master(process.address, lambda sig: process.kill(sig), misses=5, interval=0.5)
    finally:
        process.kill(signal.SIGCONT)
        process.stop()


def silent_master(address: str, signal_master: Callable[[int], None], misses: int, interval: float) -> None:
    sched = Recorder()
    driver = SchedulerDriver(sched, FRAMEWORK, address, heartbeat_misses=misses)
    driver.start()
    try:
        (framework_id, _) = sched.wait("registered")
        assert driver.heartbeat_interval == interval
        sched.wait("processHeartBeat", timeout=interval * 3)
        signal_master(signal.SIGSTOP)
        stopped_at = time.monotonic()
        try:
            sched.wait("disconnected", timeout=interval * misses * 4)
            silent = time.monotonic() - stopped_at
        finally:
            signal_master(signal.SIGCONT)
        # The last heartbeat came up to one interval before the stop.
        assert interval * (misses - 1) <= silent < interval * misses * 2 + 5, \
            f"disconnected after {silent:.1f} s of silence ({misses} x {interval} s heartbeats)"
        sched.wait("reregistered", timeout=60)
        assert driver.framework_id == framework_id["value"] and driver.connected
    finally:
        driver.stop()
        driver.join()


class NotTheLeader:
    """A master that does not lead answers the scheduler API as Mesos' does: 307 with a
    protocol-relative Location naming the leader (docs/scheduler-http-api.md)."""

    def __init__(self, leader: str) -> None:
        self.subscribes = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                call = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.subscribes += call["type"] == "SUBSCRIBE"
                self.send_response(307)
                self.send_header("Location", f"//{leader}/api/v1/scheduler")
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.address = f"127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_redirect_leads_to_the_leading_master(master: LocalMaster) -> None:
    follower = NotTheLeader(master.address)
    try:
        redirected(follower.address, master)
        assert follower.subscribes == 1
    finally:
        follower.close()


def redirected(follower: str, leader: Any) -> None:
    """SUBSCRIBE at ``follower``, a master that does not lead: the driver ends up at ``leader``."""
    sched = Recorder()
    driver = SchedulerDriver(sched, FRAMEWORK, follower)
    driver.start()
    try:
        framework_id, master_info = sched.wait("registered")
        assert driver.master == leader.address and f"{master_info['hostname']}:{master_info['port']}" == leader.address
        offer = sched.wait("resourceOffers")[0][0]
        driver.declineOffer([offer["id"]], {"refuse_seconds": 60})  # calls go to the leader too
        eventually(lambda: not _framework(leader, framework_id["value"])["offers"], 30, "DECLINE at the leader")
    finally:
        driver.stop()
        driver.join()
