"""Task logs through the embedded agent's files API: the scheduler's reader and `tfmesos logs`."""
from __future__ import annotations

import contextlib
import io
import threading
from typing import Iterator

from tests.localmesos.scheduler_client import RawScheduler, command_task, framework_info, launch, wait_until

from tfmesos.core.status import StatusSnapshot
from tfmesos.scheduler.http_api import ApiServer, Operations
from tfmesos.client.logs import stream_log
from tfmesos.mesos.agent_files import LogError
from tfmesos.scheduler.task_logs import Attempt, TaskLogs

import pytest


class Job:
    """What the scheduler knows: attempts of one task and the agents' addresses."""

    def __init__(self, master, scheduler: RawScheduler):
        self.master, self.scheduler = master, scheduler
        self.attempts: list[Attempt] = []
        self.phase = "RUNNING"
        (self.agent_id, self.address), = [(a, e) for a, e in master.agent_endpoints.items()]

    def launch(self, task_id: str, command: str) -> None:
        offer = self.scheduler.next_offers()[0]
        assert launch(self.scheduler, offer, [command_task(task_id, offer["agent_id"]["value"], command)],
                      refuse_seconds=0).status == 202
        self.attempts.append(Attempt(task_id, offer["agent_id"]["value"]))

    def logs(self) -> TaskLogs:
        return TaskLogs(lambda task: list(self.attempts) if task == "worker:1" else [],
                        lambda agent_id: self.address if agent_id == self.agent_id else None,
                        lambda: self.scheduler.framework_id)


@pytest.fixture
def job(make_master):
    master = make_master()
    scheduler = RawScheduler(master.address)
    scheduler.subscribe(framework_info("logs"))
    yield Job(master, scheduler)
    scheduler.close()


def test_reader_tails_pages_and_keeps_finished_attempts(job):
    lines = "".join(f"line {i}\n" for i in range(1, 2001))
    job.launch("w.1", "for i in $(seq 1 2000); do echo line $i; done; echo oops >&2")
    while job.scheduler.next_update(task_id="w.1")["state"] != "TASK_FINISHED":
        pass
    job.launch("w.2", "echo second attempt; sleep 30")
    logs = job.logs()
    wait_until(lambda: logs.read("worker:1", {"offset": "0"})["data"], message="w.2 writes")

    tail = logs.read("worker:1", {"attempt": "w.1", "tail": "3"})
    assert tail["data"] == "line 1998\nline 1999\nline 2000\n" and tail["next_offset"] == tail["size"]
    assert tail["attempts"] == ["w.1", "w.2"] and tail["latest"] is False
    # Paging from the start gives the whole file, in chunks of at most 64 KiB.
    first = logs.read("worker:1", {"attempt": "w.1", "offset": "0", "length": "100"})
    assert first["data"] == lines[:100] and first["next_offset"] == 100
    assert logs.read("worker:1", {"attempt": "w.1", "file": "stderr", "tail": "1"})["data"] == "oops\n"
    latest = logs.read("worker:1", {"offset": "0"})
    assert latest["task_id"] == "w.2" and latest["data"] == "second attempt\n" and latest["latest"] is True
    assert latest["path"].endswith("/stdout") and latest["agent"] == job.address

    with pytest.raises(LogError) as bad:
        logs.read("worker:1", {"file": "../etc/passwd"})
    assert bad.value.status == 400
    with pytest.raises(LogError) as unknown:
        logs.read("worker:1", {"attempt": "w.9"})
    assert unknown.value.status == 404 and "w.1" in str(unknown.value)
    with pytest.raises(LogError) as never:
        logs.read("ps:0", {})
    assert never.value.status == 404


@contextlib.contextmanager
def following_worker_1(job: Job) -> Iterator[tuple[TaskLogs, io.BytesIO]]:
    """`tfmesos logs worker:1 --follow` against an API over ``job``'s logs, once it has printed the
    first attempt's line; on leaving, the job ends and the follower must end with it."""
    job.launch("w.1", "echo first; sleep 30")
    logs = job.logs()
    api = ApiServer(lambda: StatusSnapshot(name="logs", phase=job.phase), lambda: None, lambda: None, ops=Operations(logs=logs.read))
    api.start()
    out = io.BytesIO()
    stop = threading.Event()
    follower = threading.Thread(target=stream_log, args=(api.address, "worker:1", "stdout", None, True, out, stop))
    try:
        wait_until(lambda: logs.read("worker:1", {"offset": "0"})["data"], message="w.1 writes")
        follower.start()
        wait_until(lambda: b"first\n" in out.getvalue(), message="the first attempt's output")
        yield logs, out
        assert follower.is_alive(), "the follower is still following"
        job.phase = "SUCCEEDED"
        follower.join(timeout=10)
        assert not follower.is_alive(), "--follow ends with the job"
    finally:
        stop.set()
        api.stop()


def test_tfmesos_logs_follows_across_a_relaunch_until_the_job_ends(job):
    with following_worker_1(job) as (_, out):
        job.launch("w.2", "echo second; echo more; sleep 30")
        wait_until(lambda: b"more\n" in out.getvalue(), message="the relaunched attempt's output")
    assert out.getvalue() == b"first\n--- worker:1 relaunched as w.2 ---\nsecond\nmore\n"


def test_a_follow_waits_for_a_relaunched_attempt_whose_sandbox_is_not_there_yet(job):
    """The scheduler names a relaunch's new attempt as soon as it decides the launch, before the
    agent lists its sandbox (404 for a moment): the follower waits for it instead of failing."""
    with following_worker_1(job) as (logs, out):
        job.attempts.append(Attempt("w.2", job.agent_id))  # decided, not yet on the agent
        wait_until(lambda: b"relaunched as w.2" in out.getvalue(), message="the follower moving to w.2")
        with pytest.raises(LogError) as missing:
            logs.read("worker:1", {"attempt": "w.2", "offset": "0"})
        assert missing.value.status == 404  # what the follower met, and waited through
        offer = job.scheduler.next_offers()[0]
        assert launch(job.scheduler, offer, [command_task("w.2", offer["agent_id"]["value"], "echo second; sleep 30")],
                      refuse_seconds=0).status == 202
        wait_until(lambda: b"second\n" in out.getvalue(), message="the relaunched attempt's output")
    assert out.getvalue() == b"first\n--- worker:1 relaunched as w.2 ---\nsecond\n"
