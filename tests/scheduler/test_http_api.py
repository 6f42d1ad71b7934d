"""The scheduler's API beyond status: token-guarded operations, logs errors, /metrics, the page."""
from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tfmesos.scheduler.http_api import ApiServer, Operations, Refused
from tfmesos.core.job.job import Job
from tfmesos.core.task_state import StatusUpdate
from tfmesos.core.status import VERSION, Progress, StatusSnapshot, TaskStatus
from tfmesos.mesos.agent_files import LogError
from tfmesos.scheduler.metrics import JobMetrics

from tests.core.helpers import offer, spec_of
from tests.core.job.test_job import PSS, launch_all, run_all

ROOT = Path(__file__).resolve().parents[2]


def call(api: ApiServer, method: str, path: str, token: str | None = None) -> tuple[int, str, bytes]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(f"http://{api.address}{path}", data=b"" if method == "POST" else None,
                                     method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return resp.status, resp.headers["Content-Type"], resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read()


@pytest.fixture
def job_api():
    job = Job.new(spec_of(**PSS), 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    job.report(launched[next(k for k in launched if k.role == "chief")].task_id,
               {"step": 40, "loss": 0.25, "total_steps": 400}, 1.0)
    metrics = JobMetrics(job.snapshot)
    metrics.offers_received.inc(3)
    metrics.tasks_launched.labels("worker").inc(2)
    metrics.tasks_failed.labels("worker", "REASON_COMMAND_EXECUTOR_FAILED").inc()
    metrics.set_gauge("time_to_clusterspec_seconds", 0.7)
    stopped, restarted = [], []

    def restart(task: str) -> str:
        if task != "worker:1":
            raise Refused(409, f"{task}: no such task")
        restarted.append(task)
        return "ok"

    def logs(task: str, query: dict) -> dict:
        raise LogError(404, f"{task} has not been launched yet")

    ops = Operations(logs=logs, restart=restart, metrics=metrics.render, token="s3cret-token")
    api = ApiServer(job.snapshot, lambda: None, lambda: stopped.append(True), ops=ops)
    api.start()
    yield api, stopped, restarted
    api.stop()


def test_mutating_endpoints_need_the_token_and_never_echo_it(job_api):
    api, stopped, restarted = job_api
    for path in ("/v1/shutdown", "/v1/restart/worker:1"):
        for token in (None, "wrong"):
            code, _, body = call(api, "POST", path, token)
            assert code == 401 and b"s3cret" not in body and b"TFMESOS_API_TOKEN" in body
    assert not stopped and not restarted
    assert call(api, "POST", "/v1/restart/worker:1", "s3cret-token")[0] == 202 and restarted == ["worker:1"]
    code, _, body = call(api, "POST", "/v1/restart/worker:9", "s3cret-token")
    assert code == 409 and "no such task" in json.loads(body)["error"]
    assert call(api, "POST", "/v1/shutdown", "s3cret-token")[0] == 202 and stopped == [True]
    assert call(api, "GET", "/v1/status")[0] == 200, "reading stays open"


def test_logs_errors_keep_their_status(job_api):
    api, _, _ = job_api
    code, _, body = call(api, "GET", "/v1/logs/worker:0?file=stdout")
    assert code == 404 and "not been launched" in json.loads(body)["error"]


def test_metrics_parse_with_prometheus_clients_own_parser(job_api):
    api, _, _ = job_api
    code, content_type, body = call(api, "GET", "/metrics")
    assert code == 200 and content_type.startswith("text/plain")
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(body.decode()) for s in family.samples}
    assert samples[("tfmesos_offers_received_total", ())] == 3
    assert samples[("tfmesos_tasks_launched_total", (("role", "worker"),))] == 2
    assert samples[("tfmesos_tasks_failed_total", (("reason", "REASON_COMMAND_EXECUTOR_FAILED"), ("role", "worker")))] == 1
    assert samples[("tfmesos_job_phase", (("phase", "RUNNING"),))] == 1
    assert samples[("tfmesos_job_phase", (("phase", "PLACING"),))] == 0
    assert samples[("tfmesos_tasks", (("role", "worker"), ("state", "TASK_RUNNING")))] == 2
    assert samples[("tfmesos_last_step", ())] == 40 and samples[("tfmesos_last_loss", ())] == 0.25
    assert samples[("tfmesos_time_to_clusterspec_seconds", ())] == 0.7
    assert ("tfmesos_placement_wait_seconds", ()) in samples


def test_with_token_reads_reading_needs_the_token_too_but_health_and_the_page_stay_open():
    job = Job.new(spec_of(**PSS), 0.0)
    ops = Operations(logs=lambda task, query: {"data": ""}, metrics=lambda: (b"", "text/plain"),
                     token="s3cret-token", token_reads=True)
    api = ApiServer(job.snapshot, lambda: None, lambda: None, ops=ops)
    api.start()
    try:
        for path in ("/v1/status", "/v1/logs/worker:0", "/v1/clusterspec", "/v1/endpoints", "/metrics"):
            for token in (None, "wrong"):
                code, _, body = call(api, "GET", path, token)
                assert code == 401 and b"s3cret" not in body, path
        assert call(api, "GET", "/v1/status", "s3cret-token")[0] == 200
        assert call(api, "GET", "/v1/health")[0] == 200, "health checks need no token"
        assert call(api, "GET", "/")[0] == 200, "the page's files are public; its data is not"
    finally:
        api.stop()


def test_status_serves_the_typed_snapshot_with_its_version(job_api):
    api, _, _ = job_api
    code, content_type, body = call(api, "GET", "/v1/status")
    served = json.loads(body)
    assert code == 200 and content_type == "application/json"
    assert set(served) == {f.name for f in dataclasses.fields(StatusSnapshot)} and served["version"] == VERSION
    snap = StatusSnapshot.from_json(served)
    assert snap.to_json() == served and snap.progress is not None and snap.progress.step == 40
    assert sorted(t.name for t in snap.tasks) == ["chief:0", "ps:0", "worker:0", "worker:1"]


def test_tfmesos_status_refuses_a_newer_status_plainly():
    """A client older than the scheduler it asks says so instead of misreading the status."""
    newer = {**StatusSnapshot(name="j", phase="RUNNING").to_json(), "version": VERSION + 1}
    api = ApiServer(lambda: SimpleNamespace(to_json=lambda: newer), lambda: None, lambda: None)
    api.start()
    try:
        status = subprocess.run([sys.executable, "-m", "tfmesos.client.cli", "status", "--api", api.address],
                                capture_output=True, text=True, timeout=60, cwd=ROOT,
                                env={**os.environ, "PYTHONPATH": str(ROOT)})
    finally:
        api.stop()
    assert status.returncode == 2, status.stderr
    assert f"serves status version {VERSION + 1}" in status.stderr and "upgrade tfmesos" in status.stderr
    assert "Traceback" not in status.stderr


def test_the_page_reads_the_snapshots_fields_and_version():
    """web/app.js reads the JSON of StatusSnapshot: every field it reads is one of the type's, and
    it knows the version served (a renamed field or a new version fails here, not in a browser)."""
    page = (ROOT / "tfmesos" / "scheduler" / "web" / "app.js").read_text()
    read = lambda name: set(re.findall(rf"\b{name}\.([a-z_]+)", page))
    assert read("snap") and read("snap") <= {f.name for f in dataclasses.fields(StatusSnapshot)}, read("snap")
    assert read("t") and read("t") <= {f.name for f in dataclasses.fields(TaskStatus)}, read("t")
    assert read("p") and read("p") <= set(Progress.NAMED), read("p")
    (version,) = re.findall(r"const STATUS_VERSION = (\d+);", page)
    assert int(version) == VERSION
