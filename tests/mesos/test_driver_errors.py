"""A call the master refuses is an error that names the status and the master's answer, never the
call itself: pymesos quotes the whole body, and an ACCEPT's TaskInfos carry the tasks' environment."""
from __future__ import annotations

import threading
from typing import Any

import pytest
from pymesos import MesosSchedulerDriver

from localmesos import LocalMaster
from tfmesos.mesos.pymesos_driver import Pymesos


class _Offers:
    """pymesos' scheduler interface: keeps the offers; every other callback does nothing."""

    def __init__(self) -> None:
        self.offers: list[dict[str, Any]] = []
        self.offered = threading.Event()

    def resourceOffers(self, driver: Any, offers: list[dict[str, Any]]) -> None:  # noqa: N802
        self.offers += offers
        self.offered.set()

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


def test_a_refused_accept_does_not_quote_the_tasks_environment(tmp_path) -> None:
    master = LocalMaster(work_dir=tmp_path / "master", agents=1).start()
    sched = _Offers()
    driver = Pymesos.driver_class(MesosSchedulerDriver)(sched, {"user": "root", "name": "refused", "failover_timeout": 5},
                                                master.address, use_addict=False)
    try:
        driver.start()
        assert sched.offered.wait(30)
        offer = sched.offers[0]
        task = {"name": "t", "task_id": {"value": "t1"}, "agent_id": offer["agent_id"],
                "resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": 0.1}}],
                "command": {"value": "true", "environment": {"variables": [{"name": "DB_PASSWORD", "value": "hunter2"}]}}}
        good = driver.stream_id
        driver._stream_id = "stale"  # as after a master failover: Mesos refuses the next call (400)
        with pytest.raises(RuntimeError) as refused:
            driver.launchTasks([offer["id"]], [task])
        driver._stream_id = good
        assert str(refused.value).startswith("Failed to send request 400: "), refused.value
        assert "didn't match the stream ID" in str(refused.value)
        assert "hunter2" not in str(refused.value) and "ACCEPT" not in str(refused.value)
    finally:
        driver.stop()
        master.stop()
