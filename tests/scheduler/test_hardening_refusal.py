"""A subscription that Mesos refuses for good ends the run at once, with the master's own words.

The answers are replayed byte for byte from the recorded real Mesos 1.12.0 trace
``tests/data/mesos-traces/09-authz.jsonl`` (an ACL refusal: ERROR event then EOF; a principal
mismatch: HTTP 400). pymesos alone would re-subscribe in a tight loop: the run must end within
seconds, non-zero, after a handful of SUBSCRIBEs at most, naming the option to check.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TRACE = {c["case"]: c for c in map(json.loads, (ROOT / "tests/data/mesos-traces/09-authz.jsonl").read_text().splitlines())}


class ReplayMaster:
    """Serves /version and answers every SUBSCRIBE with one recorded reply."""

    def __init__(self, recorded: dict):
        self.subscribes = 0
        replay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                body = json.dumps({"version": "1.12.0"}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802
                call = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                if call.get("type") != "SUBSCRIBE":
                    self.send_response(202)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                replay.subscribes += 1
                body, status = recorded["body_first_bytes"].encode(), recorded["status"]
                # Head and body in one write, as one packet: pymesos fails on an error reply whose
                # body comes in a later read (a TypeError in its own code).
                if status == 200:  # the stream: one RecordIO record, then Mesos closes it
                    head = ("Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
                            "Mesos-Stream-Id: 6b4f3c3e-0000-0000-0000-000000000000\r\n")
                    payload = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
                else:
                    head = f"Content-Type: text/plain; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
                    payload = body
                reason = {200: "OK", 400: "Bad Request", 503: "Service Unavailable"}[status]
                self.wfile.write(f"HTTP/1.1 {status} {reason}\r\n{head}\r\n".encode() + payload)
                self.wfile.flush()
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.address = f"127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _run_against(master: ReplayMaster, tmp: Path, connect_timeout: float, service: dict | None = None,
                 env: dict | None = None) -> tuple[subprocess.CompletedProcess, float]:
    """``tfmesos run`` of a one-task job against the replaying master; closes the master."""
    (tmp / "o.json").write_text(json.dumps({"job": {"command": "true"}, "roles": {"worker": {"count": 1}},
                                            "service": service or {}}))
    t0 = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-m", "tfmesos.client.cli", "run", str(tmp / "o.json"), "--master",
                               master.address, "--state-dir", str(tmp / "state"), "--connect-timeout", str(connect_timeout)],
                              env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
                              capture_output=True, text=True, timeout=60)
    finally:
        master.close()
    return proc, time.monotonic() - t0


@pytest.mark.parametrize("case, says, option", [
    ("acl-refused", "Not authorized to register framework  with roles { team-a }", "service.role"),
    ("principal-mismatch", "does not match principal 'team-a'", "service.principal"),
])
def test_refused_subscription_ends_the_run(case: str, says: str, option: str, tmp_path: Path):
    master = ReplayMaster(TRACE[case])
    service = {"name": "b-as-a", "role": "team-a", "principal": "team-a"}
    proc, elapsed = _run_against(master, tmp_path, 20, service, {"MESOS_SECRET": "hunter2"})
    assert proc.returncode == 4, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert says in last and option in last and master.address in last, proc.stderr
    assert "Traceback" not in proc.stderr and "hunter2" not in proc.stderr + proc.stdout
    assert master.subscribes <= 3, f"re-subscribed {master.subscribes} times after a permanent refusal"
    assert elapsed < 15, elapsed  # well inside the connect timeout: a refusal is not waited out
    assert not [p for p in (tmp_path / "state").glob(".state-*")]


def _recorded_subscribed() -> dict:
    """The SUBSCRIBED record of the recorded trace, as a RecordIO frame."""
    for line in (ROOT / "tests/data/mesos-traces/01-subscribe.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["dir"] == "event" and record["body"]["type"] == "SUBSCRIBED":
            body = json.dumps(record["body"]).replace("<FRAMEWORK_ID_1>", "f-0000")
            return {"status": 200, "body_first_bytes": f"{len(body)}\n{body}"}
    raise AssertionError("no SUBSCRIBED in the trace")


def test_a_stream_that_keeps_dropping_is_retried_with_backoff(tmp_path: Path):
    """Retryable: the master closes each stream right after SUBSCRIBED. pymesos alone re-subscribes
    thousands of times a second; the scheduler backs off (0.5 s doubling, capped)."""
    master = ReplayMaster(_recorded_subscribed())
    (tmp_path / "o.json").write_text(json.dumps({"job": {"command": "true"}, "roles": {"worker": {"count": 1}}}))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "tfmesos.client.cli", "run", str(tmp_path / "o.json"), "--master",
                             master.address, "--state-dir", str(tmp_path / "state")],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while master.subscribes < 3 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        first = time.monotonic()
        count = master.subscribes
        while time.monotonic() - first < 3 and proc.poll() is None:  # watch the retries for 3 s
            time.sleep(0.1)
        during = master.subscribes - count
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
        master.close()
    assert count >= 3, (count, out, err)
    # Backoff 0.5, 1, 2, 4 s: at most a few more within 3 s (tight looping would be thousands).
    assert during <= 4, f"{during} SUBSCRIBEs in 3 s"
    assert "Traceback" not in err


def test_a_master_without_a_leader_is_retried_with_backoff_until_the_connect_timeout(tmp_path: Path):
    """503 (no leader yet) is retryable: backed off, then given up at --connect-timeout, plainly."""
    master = ReplayMaster({"status": 503, "body_first_bytes": ""})
    proc, elapsed = _run_against(master, tmp_path, 3)
    assert proc.returncode == 3, proc.stderr
    assert f"cannot subscribe to the Mesos master at {master.address}: no SUBSCRIBED within 3 s" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert 1 <= master.subscribes <= 6, master.subscribes  # 0.5, 1, 2 s apart: not thousands
    assert elapsed < 25, elapsed


@pytest.mark.parametrize("message, option", [
    ("Not authorized to register framework  with roles { team-a }", "service.role"),
    ("Authenticated principal 'team-b' does not match principal 'team-a' set in `FrameworkInfo`", "service.principal"),
    ("Role 'x' is not present in the master's --roles", "service.role"),
    ("User 'root' is not allowed to run frameworks without --root_submissions set", "service.user"),
    ("Invalid failover_timeout", "service.failover_timeout"),
    ("Framework failed over", "another scheduler"),
    ("Framework has been removed", "start the job again"),
])
def test_each_refusal_names_the_option_behind_it(message: str, option: str):
    from tfmesos.mesos.driver import refusal_hint

    assert option in refusal_hint(message)
