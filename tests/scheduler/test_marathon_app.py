"""The Marathon lifecycle (tfmesos/scheduler/marathon_app.py): a finished job is served, over a real
HTTP API, until the app is removed; SIGTERM while a job runs stops it locally and leaves it to the
next scheduler on a real cluster."""
from __future__ import annotations

import io
import json
import os
import signal
import threading
import time
import urllib.request
from typing import Any

import pytest

from tfmesos.core.status import StatusSnapshot
from tfmesos.scheduler import marathon_app as marathon
from tfmesos.scheduler.http_api import ApiServer, Operations
from tfmesos.scheduler.console import Console

FINAL = StatusSnapshot(name="done-job", phase="SUCCEEDED")


def _serve_in_main_thread(remove: str) -> tuple[int, dict[str, Any], str]:
    """serve_until_removed (it installs a SIGTERM handler: main thread only) while a helper thread
    reads the status and then removes the app by ``remove``: 'sigterm' or 'shutdown'."""
    started: list[ApiServer] = []
    ready = threading.Event()
    seen: dict[str, Any] = {}

    def start_api(snapshot: Any, stop: Any, ops: Operations) -> ApiServer:
        api = ApiServer(snapshot, lambda: None, stop, "127.0.0.1", 0, ops)
        api.start()
        started.append(api)
        ready.set()
        return api

    def remover() -> None:
        assert ready.wait(10)
        base = f"http://{started[0].address}"
        with urllib.request.urlopen(f"{base}/v1/status", timeout=10) as reply:
            seen.update(json.load(reply))
        if remove == "shutdown":
            urllib.request.urlopen(urllib.request.Request(f"{base}/v1/shutdown", method="POST", data=b""), timeout=10).close()
            return
        deadline = time.monotonic() + 10  # the handler is installed right after the API starts
        while signal.getsignal(signal.SIGTERM) is before and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGTERM)

    before = signal.getsignal(signal.SIGTERM)
    out = io.StringIO()
    helper = threading.Thread(target=remover, daemon=True)
    helper.start()
    code = marathon.serve_until_removed(start_api, lambda: FINAL, Console(out), Operations(), code=1)
    helper.join(10)
    assert signal.getsignal(signal.SIGTERM) is before, "the previous SIGTERM handler is put back"
    return code, seen, out.getvalue()


@pytest.mark.parametrize("remove", ["sigterm", "shutdown"])
def test_a_finished_job_is_served_until_the_app_is_removed(remove: str) -> None:
    code, seen, printed = _serve_in_main_thread(remove)
    assert code == 1, "the process exits with the job's code once the app is removed"
    assert seen["phase"] == "SUCCEEDED" and seen["name"] == "done-job"
    assert "until the app is removed" in printed


def test_sigterm_leaves_the_job_to_the_next_scheduler_only_under_marathon_on_a_real_cluster(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(marathon.MARATHON_APP, "/tfmesos")
    assert marathon.leaves_on_sigterm(local=False), "Marathon restarting the app: the next instance resumes"
    assert not marathon.leaves_on_sigterm(local=True), "the embedded master dies with us: stop the job"
    monkeypatch.delenv(marathon.MARATHON_APP)
    assert not marathon.leaves_on_sigterm(local=False), "outside Marathon SIGTERM stops the job like Ctrl-C"


def test_only_a_persisted_job_under_marathon_is_kept_finished(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(marathon.MARATHON_APP, raising=False)
    assert not marathon.keeps_finished(True)
    monkeypatch.setenv(marathon.MARATHON_APP, "/tfmesos/job")
    assert marathon.keeps_finished(True) and not marathon.keeps_finished(False)
