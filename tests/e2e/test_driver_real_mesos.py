"""tfmesos' own scheduler driver against a real Apache Mesos 1.12 (see real_mesos.py), with the
scenarios and assertions of tests/mesos/test_scheduler_driver.py: every call, failover to a second
driver, refused credentials, a master that stops sending heartbeats (SIGSTOP, Mesos' fixed 15 s
interval, one missed), a non-leading master's 307, and a leader change behind ZooKeeper. And the
main example on the pymesos driver (the ``pymesos`` extra), which keeps that path true."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.e2e.harness import accuracy, run_scheduler, stop_scheduler, wait_gone, write_options
from tests.e2e.real_mesos import RealMesos
from tests.e2e.test_jobs import PSS
from tests.e2e.test_output_catchup_real_mesos import TwoMasters
from tests.mesos.test_scheduler_driver import (FRAMEWORK, Recorder, every_call, failover, redirected,
                                               refused_credentials, silent_master)
from tfmesos.mesos.scheduler_driver import SchedulerDriver

pytestmark = pytest.mark.slow

AGENT = "cpus:4;mem:8192;disk:4000;ports:[31000-31999]"


def test_every_call_tfmesos_sends_reaches_the_real_master(tmp_path: Path) -> None:
    with RealMesos(tmp_path / "mesos", [AGENT]) as master:
        every_call(master)


def test_a_second_driver_fails_over_to_the_framework_on_real_mesos(tmp_path: Path) -> None:
    with RealMesos(tmp_path / "mesos", [AGENT]) as master:
        failover(master)


def test_refused_credentials_end_the_driver_on_real_mesos(tmp_path: Path) -> None:
    credentials = tmp_path / "credentials"
    credentials.write_text(json.dumps({"credentials": [{"principal": "team-a", "secret": "right"}]}))
    with RealMesos(tmp_path / "mesos", [AGENT], ["--authenticate_http_frameworks", "--http_framework_authenticators=basic",
                                                 f"--credentials=file://{credentials}"]) as master:
        refused_credentials(master)


def test_a_real_master_silent_past_its_heartbeat_is_left_and_found_again(tmp_path: Path) -> None:
    with RealMesos(tmp_path / "mesos", [AGENT]) as master:
        pid = int((master.home / "run" / "master.pid").read_text())
        silent_master(master.address, lambda sig: os.kill(pid, sig), misses=1, interval=15.0)


class _Leader:
    """The leading one of TwoMasters, as the scenarios read a master: its address and state."""

    def __init__(self, masters: TwoMasters) -> None:
        self.masters = masters
        index = masters.leader()
        assert index is not None, "no leading master"
        self.address = f"127.0.0.1:{masters.ports[index]}"

    def state(self) -> dict:
        return self.masters.state()


def test_a_redirect_then_a_leader_change_behind_zookeeper_on_real_mesos(tmp_path: Path, zk) -> None:
    masters = TwoMasters(tmp_path / "mesos", zk.hosts)
    try:
        leader = _Leader(masters)
        follower = next(f"127.0.0.1:{p}" for p in masters.ports if f"127.0.0.1:{p}" != leader.address)
        redirected(follower, leader)  # the follower's 307 names the leader

        sched = Recorder()
        driver = SchedulerDriver(sched, FRAMEWORK, masters.zk)
        driver.start()
        try:
            framework_id, _ = sched.wait("registered", timeout=60)
            assert driver.master == leader.address
            killed = masters.kill_leader()
            sched.wait("disconnected", timeout=60)
            sched.wait("reregistered", timeout=120)  # the next leader, from ZooKeeper
            assert driver.master == f"127.0.0.1:{masters.ports[1 - killed]}" and driver.connected
            assert driver.framework_id == framework_id["value"]
            assert any(f["id"] == driver.framework_id for f in masters.state()["frameworks"])
        finally:
            driver.stop()
            driver.join()
    finally:
        masters.stop()


def test_the_main_example_on_the_pymesos_driver_on_real_mesos(tmp_path: Path) -> None:
    """``--driver pymesos`` (the pymesos extra, as tools/install_pymesos.py installs it)."""
    with RealMesos(tmp_path / "mesos", [AGENT]) as master:
        opts = write_options(tmp_path / "o.json", PSS, service={"name": "pss-pymesos"})
        run = run_scheduler(opts, "--master", master.address, "--driver", "pymesos", "--state-dir", str(tmp_path / "state"))
        try:
            assert run.wait(300) == 0, run.output[-4000:]
        finally:
            stop_scheduler(run)
        assert "the Mesos driver is pymesos" in run.output
        assert "job pss-pymesos SUCCEEDED: chief:0 finished" in run.output and accuracy(run.output) >= 0.9
        assert re.search(r"ps:0 +\S+ +TASK_KILLED", run.output)
        frameworks = master.state()["completed_frameworks"]
        assert [f["name"] for f in frameworks] == ["pss-pymesos"], "torn down at the end, by pymesos' driver"
    assert not wait_gone("pss-pymesos", timeout=5)


def test_a_maintenance_window_reaches_the_scheduler_as_inverse_offers_on_real_mesos(tmp_path: Path) -> None:
    """Planned maintenance (the operator API's schedule) on the agent a task runs on: INVERSE_OFFERS
    reach ``inverseOffers``, the driver declines and accepts them, and the schedule's removal
    withdraws the outstanding one (RESCIND_INVERSE_OFFER, ``inverseOfferRescinded``). Only real
    Mesos has maintenance; the embedded master sends neither event."""
    import time

    from tests.mesos.test_scheduler_driver import _task

    with RealMesos(tmp_path / "mesos", [AGENT]) as master:
        sched = Recorder()
        driver = SchedulerDriver(sched, FRAMEWORK, master.address)
        driver.start()
        try:
            sched.wait("registered")
            offer = sched.wait("resourceOffers")[0][0]
            driver.launchTasks([offer["id"]], [_task(offer, "busy", "sleep 300")])
            sched.wait("statusUpdate", lambda a: a[0]["state"] == "TASK_RUNNING")
            agent = master.state()["slaves"][0]
            machine = {"hostname": agent["hostname"], "ip": agent["pid"].split("@")[1].split(":")[0]}
            window = {"machine_ids": [machine], "unavailability": {"start": {"nanoseconds": time.time_ns() + 3600 * 10**9}}}
            master.operator({"type": "UPDATE_MAINTENANCE_SCHEDULE",
                             "update_maintenance_schedule": {"schedule": {"windows": [window]}}})
            (inverse,) = sched.wait("inverseOffers", timeout=60)
            assert inverse[0]["agent_id"] == offer["agent_id"] and "unavailability" in inverse[0]
            driver.declineInverseOffer([inverse[0]["id"]], {"refuse_seconds": 1})
            (again,) = sched.wait("inverseOffers", lambda a: a[0][0]["id"] != inverse[0]["id"], timeout=60)
            master.operator({"type": "UPDATE_MAINTENANCE_SCHEDULE",
                             "update_maintenance_schedule": {"schedule": {}}})
            (rescinded,) = sched.wait("inverseOfferRescinded", timeout=60)
            assert rescinded == again[0]["id"]
            driver.acceptInverseOffers([again[0]["id"]])  # withdrawn already: the master ignores it
        finally:
            driver.stop()
            driver.join()
        assert not sched.named("error")
