"""``python -m localmesos``: readiness line, serving, clean SIGTERM exit."""
from __future__ import annotations

import base64
import json
import os
import re
import selectors
import signal
import subprocess
import sys
import time

import pytest

from tests.localmesos.sandbox_procs import assert_no_processes, processes_under
from tests.localmesos.scheduler_client import RawScheduler, command_task, framework_info, http_call, launch, wait_until

from localmesos import main


def read_line(process: subprocess.Popen, timeout: float) -> str:
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)  # type: ignore[arg-type]
    try:
        if not selector.select(timeout):
            raise AssertionError("no readiness line")
        return process.stdout.readline()  # type: ignore[union-attr]
    finally:
        selector.close()


@pytest.fixture
def cli(tmp_path):
    work_dir = tmp_path / "cli-work"
    credentials = tmp_path / "credentials"
    credentials.write_text(json.dumps({"credentials": [{"principal": "alice", "secret": "s3cret"}]}))
    process = subprocess.Popen(
        [sys.executable, "-m", "localmesos", "--port", "0", "--agents", "2", "--cpus", "1",
         "--mem", "512", "--disk", "100", "--gpus-per-agent", "1", "--work-dir", str(work_dir),
         "--first-port", "40000", "--ports-per-agent", "10",
         "--credentials", str(credentials)],
        stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        yield process, work_dir
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)
        assert_no_processes(work_dir)


def test_cli_serves_until_sigterm_and_cleans_up(cli):
    process, work_dir = cli
    line = read_line(process, 60)
    found = re.fullmatch(r"tfmesos local-master listening on 127\.0\.0\.1:(\d+)\n", line)
    assert found, line
    address = f"127.0.0.1:{found.group(1)}"
    state = http_call(address, "GET", "/state").body
    assert len(state["slaves"]) == 2 and state["slaves"][0]["resources"]["gpus"] == 1.0
    assert sorted(s["resources"]["ports"] for s in state["slaves"]) == ["[40000-40009]", "[40010-40019]"]

    assert http_call(address, "POST", "/api/v1/scheduler", {}, {"Content-Type": "application/json"}).status == 401
    scheduler = RawScheduler(address, auth="Basic " + base64.b64encode(b"alice:s3cret").decode())
    scheduler.subscribe(framework_info("cli"))
    offer = scheduler.next_offers()[0]
    launch(scheduler, offer, [command_task("sleeper", offer["agent_id"]["value"], "sleep 60")])
    assert scheduler.next_update()["state"] == "TASK_STARTING"
    wait_until(lambda: processes_under(work_dir), message="task process")

    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    assert process.wait(30) == 0
    assert time.monotonic() - started < 15
    summary = process.stdout.read().splitlines()  # what it printed after the readiness line
    assert summary[0] == "  agents 0-1: cpus 1, mem 512 MB, disk 100 MB, gpus 1", summary
    assert f"  work dir (sandboxes): {work_dir}" in summary
    assert any(line.startswith("  note: every agent has GPUs") and "GPU_RESOURCES" in line for line in summary)
    assert any(f"tfmesos run options.json --master {address}" in line for line in summary)
    assert_no_processes(work_dir)
    scheduler.close()


def test_main_rejects_bad_arguments(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--agents", "many"])
    assert exit_info.value.code == 2
    assert "--agents" in capsys.readouterr().err


def test_what_cannot_start_is_one_line_with_exit_2_and_no_secret(tmp_path, capsys):
    """A missing or malformed credentials file, a port in use: one line each, no traceback."""
    import socket

    assert main(["--credentials", str(tmp_path / "missing.json")]) == 2
    assert capsys.readouterr().err == (f"tfmesos local-master: --credentials: cannot read "
                                       f"'{tmp_path / 'missing.json'}': No such file or directory\n")
    (tmp_path / "old.txt").write_text("principal hunter2\n")
    assert main(["--credentials", str(tmp_path / "old.txt")]) == 2
    err = capsys.readouterr().err
    assert "Invalid json format" in err and "hunter2" not in err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["--port", str(port), "--work-dir", str(tmp_path / "work")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tfmesos local-master: cannot start: Address already in use") and "Traceback" not in err


def test_a_burst_of_stop_signals_stops_it_once_and_cleans_up(cli):
    """A parent killed outright sends PDEATHSIG once per thread of it that held the child (the
    kernel reparents to each in turn): the master gets several SIGTERMs in a row. A handler that
    set a threading.Event deadlocked when one landed inside another's set()."""
    process, work_dir = cli
    address = re.fullmatch(r"tfmesos local-master listening on (\S+)\n", read_line(process, 60)).group(1)
    scheduler = RawScheduler(address, auth="Basic " + base64.b64encode(b"alice:s3cret").decode())
    scheduler.subscribe(framework_info("burst"))
    offer = scheduler.next_offers()[0]
    launch(scheduler, offer, [command_task("sleeper", offer["agent_id"]["value"], "sleep 60")])
    wait_until(lambda: processes_under(work_dir), message="task process")

    for i in range(2000):
        try:
            os.kill(process.pid, signal.SIGTERM if i % 2 else signal.SIGINT)
        except ProcessLookupError:
            break
    started = time.monotonic()
    assert process.wait(30) == 0
    assert time.monotonic() - started < 15
    assert_no_processes(work_dir)
    scheduler.close()
