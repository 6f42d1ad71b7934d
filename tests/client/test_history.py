"""Finished jobs: the record kept at the end and what `tfmesos status NAME`, `tfmesos jobs` and
`tfmesos logs NAME ROLE:INDEX` make of it; serving an ended job; a follower's last read.

The whole path with a real job, agents and a browser is tests/e2e/test_history.py."""
from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from tfmesos.scheduler.http_api import ApiServer, Operations
from tfmesos.core.job.job import Job
from tfmesos.core.task_state import StatusUpdate, TaskState
from tfmesos.core.status import StatusSnapshot, TaskStatus
from tfmesos.client.history import duration, jobs_lines, log_lines, same_address, status_lines, task_counts
from tfmesos.client.logs import kept_log
from tfmesos.mesos.agent_files import LogError
from tfmesos.scheduler.task_logs import TaskLogs
from tfmesos.store.format import end_of, record
from tfmesos.store.state_store import DirStore

from tests.core.helpers import spec_of
from tests.core.job.test_job import PSS, launch_all, run_all

ROOT = Path(__file__).resolve().parents[2]


def ended_record(tmp_path: Path, name: str = "hist", at: float = 1_800_000_000.0) -> dict:
    """A record as `tfmesos run` keeps it: a PSS job whose chief finished, with a sandbox on disk."""
    job = Job.new(spec_of(**PSS), at - 75)
    _, launched = launch_all(job)
    run_all(job, launched)
    chief = next(t for k, t in launched.items() if k.role == "chief").task_id
    job.report(chief, {"step": 100, "loss": 0.5, "total_steps": 200}, at - 20)
    job.report(chief, {"step": 200, "loss": 0.25, "total_steps": 200}, at - 10)
    job.status(StatusUpdate(chief, TaskState.TASK_FINISHED, agent_id="S0", exit_code=0), at - 5)
    for key, t in launched.items():
        if key.role != "chief":
            job.status(StatusUpdate(t.task_id, TaskState.TASK_KILLED, agent_id="S0"), at - 1)
    sandbox = tmp_path / "sandbox" / chief
    sandbox.mkdir(parents=True)
    (sandbox / "stdout").write_bytes(b"".join(b"line %d\n" % i for i in range(1, 101)) + b"final test accuracy: 0.93\n")
    logs = {str(k): [{"task_id": t.task_id, "agent": "127.0.0.1:1", "directory": str(tmp_path / "sandbox" / t.task_id)}]
            for k, t in launched.items()}
    options = {"service": {"name": name}}
    return record("F-1", "d", options, job.to_dict(), finished=True,
                  end=end_of(at, job.progress(), logs, "127.0.0.1:8123", "127.0.0.1:5050"))


def test_status_of_an_ended_job_reads_its_end_tasks_progress_and_where_the_logs_are(tmp_path) -> None:
    text = "\n".join(status_lines(ended_record(tmp_path)))
    assert text.startswith("job hist  SUCCEEDED: chief:0 finished\n")
    assert "after 1m15s" in text and "from its record: the scheduler is gone" in text
    assert "progress [####################] step 200/200 (100%) loss 0.25" in text
    assert "10 steps/s on average (2 points kept for the chart)" in text
    assert "chief:0      h0:31000              TASK_FINISHED  restarts 0 exit 0" in text
    assert text.index("chief:0") < text.index("ps:0") < text.index("worker:0"), "roles in their order"
    assert f"chief:0      127.0.0.1:1           {tmp_path}/sandbox/t.chief.0." in text
    assert "event: succeeded: chief:0 finished" in text


def test_jobs_lists_ends_newest_first_with_their_log_locations(tmp_path) -> None:
    older, newer = ended_record(tmp_path / "a", "first", 1_800_000_000.0), ended_record(tmp_path / "b", "second", 1_800_000_100.0)
    lines = jobs_lines([newer, older])
    assert lines[0].split() == ["NAME", "END", "WHEN", "DURATION", "TASKS", "LOGS"]
    assert lines[1].startswith("second  SUCCEEDED") and lines[1].endswith("4: 3 killed, 1 finished  sandboxes on 127.0.0.1:1")
    assert lines[1].split()[4] == "1m15s"
    assert [line.split()[0] for line in lines] == ["NAME", "second", "first"], "a line a job, no sandbox paths"
    assert jobs_lines([]) == []
    assert max(map(len, lines)) < 110, lines


def test_jobs_says_a_sandbox_is_gone_in_words_not_its_path(tmp_path) -> None:
    from tfmesos.client.history import logs_cell
    from tfmesos.client.records import sandbox_present

    rec = ended_record(tmp_path)  # its agent 127.0.0.1:1 is this machine; the chief's sandbox is on disk
    assert logs_cell(rec, sandbox_present) == "sandboxes on 127.0.0.1:1"
    import shutil

    shutil.rmtree(tmp_path / "sandbox")
    assert logs_cell(rec, sandbox_present) == "sandboxes gone"
    for attempts in rec["end"]["logs"].values():
        attempts[-1]["tail"] = {"stdout": "x\n", "stderr": ""}
    assert logs_cell(rec, sandbox_present) == "sandboxes gone; the record kept their ends"
    remote = {"task_id": "t", "agent": "10.0.0.5:5051", "directory": "/var/lib/mesos/slaves/S0/x"}
    assert sandbox_present(remote) is None, "another machine's sandbox: not known here, not said gone"


def test_jobs_lists_this_users_jobs_and_all_with_all(tmp_path) -> None:
    state = tmp_path / "state"
    for name, user in (("mine", None), ("theirs", "someone-else")):
        rec = ended_record(tmp_path / name, name)
        if user:
            rec["end"]["user"] = user
        DirStore(state, name).keep_end(rec)

    def jobs(*more: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "tfmesos.client.cli", "jobs", "--state-dir", str(state), *more],
                              capture_output=True, text=True, timeout=60, cwd=ROOT)

    own = jobs()
    assert [line.split()[0] for line in own.stdout.splitlines()[1:]] == ["mine"], own.stdout
    assert "1 job(s) of other users not listed: --all lists them" in own.stderr
    every = jobs("--all")
    assert sorted(line.split()[0] for line in every.stdout.splitlines()[1:]) == ["mine", "theirs"] and not every.stderr


def test_log_locations_are_cut_short_for_a_big_job_and_counts_read_plainly(tmp_path) -> None:
    rec = ended_record(tmp_path)
    assert log_lines(rec, 2)[-1] == "... 2 more (tfmesos status NAME lists them all)"
    assert task_counts(rec) == "4: 3 killed, 1 finished"
    assert (duration(5), duration(75), duration(3725), duration(None)) == ("5s", "1m15s", "1h02m05s", "-")


@pytest.mark.parametrize("a, b, same", [("127.0.0.1:80", "localhost:80", True), ("h:80", "h:80", True),
                                        ("h:80", "h:81", False), ("h:80", "g:80", False), (None, "h:80", False)])
def test_an_api_address_is_recognised_in_its_loopback_forms(a, b, same) -> None:
    assert same_address(a, b) is same


def test_a_kept_log_is_read_from_the_sandbox_on_this_disk_once_its_agent_is_gone(tmp_path) -> None:
    rec = ended_record(tmp_path)
    (attempt,) = rec["end"]["logs"]["chief:0"]  # its agent, 127.0.0.1:1, refuses connections
    out = io.BytesIO()
    assert kept_log(attempt, "F-1", "stdout", 2, out) == f"{attempt['directory']} on this machine"
    assert out.getvalue() == b"line 100\nfinal test accuracy: 0.93\n"
    whole = io.BytesIO()
    kept_log(attempt, "F-1", "stdout", None, whole)
    assert whole.getvalue().count(b"\n") == 101
    gone = {**attempt, "directory": str(tmp_path / "removed")}
    with pytest.raises(LogError, match=r"the log of t\.chief\.0\.\d+ is gone: agent 127\.0\.0\.1:1 does not answer"):
        kept_log(gone, "F-1", "stdout", None, io.BytesIO())
    # A local run's sandboxes go with its embedded master: the end kept in the record is read then.
    kept = io.BytesIO()
    source = kept_log({**gone, "tail": {"stdout": "a\nb\nc\n", "stderr": None}}, "F-1", "stdout", 2, kept)
    assert kept.getvalue() == b"b\nc\n" and source.startswith("the job's record")
    with pytest.raises(LogError, match="is gone"):
        kept_log({**gone, "tail": {"stdout": "a\n", "stderr": None}}, "F-1", "stderr", None, io.BytesIO())


def test_the_command_line_answers_from_the_kept_record_at_once(tmp_path) -> None:
    state = tmp_path / "state"
    rec = ended_record(tmp_path)
    DirStore(state, "hist").keep_end(rec)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TFMESOS_API": "127.0.0.1:1"}  # nobody answers there

    def cli(*args: str, without_api: bool = False) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "tfmesos.client.cli", *args, "--state-dir", str(state)],
                              capture_output=True, text=True, timeout=60, cwd=ROOT,
                              env={k: v for k, v in env.items() if not (without_api and k == "TFMESOS_API")})

    status = cli("status", "hist")
    assert status.returncode == 0 and status.stdout.startswith("job hist  SUCCEEDED"), status.stderr
    assert json.loads(cli("status", "hist", "--json").stdout)["end"]["api"] == "127.0.0.1:8123"
    assert cli("status", "--api", "localhost:8123").stdout.startswith("job hist  SUCCEEDED"), "found by its API"
    missing = cli("status", "nope", without_api=True)
    assert missing.returncode == 2 and "job 'nope': no record of it in" in missing.stderr
    assert cli("jobs").stdout.splitlines()[1].startswith("hist  SUCCEEDED")
    logs = cli("logs", "hist", "chief:0", "--tail", "1")
    assert (logs.returncode, logs.stdout) == (0, "final test accuracy: 0.93\n"), logs.stderr
    assert re.match(r"tfmesos logs: chief:0 of the run of hist that ended \d{4}-\d\d-\d\d \d\d:\d\d", logs.stderr)
    assert "on this machine" in logs.stderr, "says where it was read"


def test_status_and_logs_of_a_name_never_show_another_job_s_api(tmp_path) -> None:
    """An exported TFMESOS_API of one job, then `tfmesos status OTHER`: OTHER's own API (announced in
    the state directory) is found, or the command says whose API answered; never the wrong job."""
    state = tmp_path / "state"
    apis = {name: ApiServer(lambda name=name: StatusSnapshot(name=name, phase="RUNNING"), lambda: None, lambda: None)
            for name in ("first", "second")}
    for api in apis.values():
        api.start()
    try:
        DirStore(state, "second").announce(apis["second"].address)  # this process plays second's scheduler
        env = {**os.environ, "PYTHONPATH": str(ROOT), "TFMESOS_API": apis["first"].address}

        def cli(*args: str) -> subprocess.CompletedProcess:
            return subprocess.run([sys.executable, "-m", "tfmesos.client.cli", *args, "--state-dir", str(state),
                                   "--connect-timeout", "2"], capture_output=True, text=True, timeout=60, cwd=ROOT,
                                  env=env)

        second = cli("status", "second", "--json")
        assert json.loads(second.stdout)["name"] == "second", ("second's own API, though TFMESOS_API names first's",
                                                               second.stderr)
        assert json.loads(cli("status", "--json").stdout)["name"] == "first", "no name: TFMESOS_API's job"
        third = cli("status", "third")
        assert third.returncode == 2 and third.stdout == "", third.stdout
        assert f"the scheduler API at {apis['first'].address} runs job 'first'" in third.stderr, third.stderr
    finally:
        for api in apis.values():
            api.stop()


def test_an_ended_job_is_served_at_the_same_address_with_its_final_status_and_no_operations() -> None:
    snap = StatusSnapshot(name="j", phase="RUNNING")
    stopped: list[bool] = []
    api = ApiServer(lambda: snap, lambda: {"version": 1, "cluster": {}}, lambda: stopped.append(True),
                    ops=Operations(restart=lambda task: "ok"))
    api.start()
    try:
        address = api.address
        ended = threading.Event()
        api.serve_ended(lambda: StatusSnapshot(name="j", phase="SUCCEEDED"), Operations(), ended.set)
        assert api.address == address
        with urllib.request.urlopen(f"http://{address}/v1/status", timeout=10) as resp:
            assert json.load(resp)["phase"] == "SUCCEEDED"
        for path, method, code in (("/v1/clusterspec", "GET", 404), ("/v1/restart/worker:0", "POST", 409)):
            request = urllib.request.Request(f"http://{address}{path}", method=method,
                                             data=b"" if method == "POST" else None)
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=10)
            assert refused.value.code == code
            if code == 409:  # says why, not "no such endpoint"
                assert "takes no restart requests: it has ended" in json.load(refused.value)["error"]
        request = urllib.request.Request(f"http://{address}/v1/shutdown", method="POST", data=b"")
        with urllib.request.urlopen(request, timeout=10) as resp:
            assert json.load(resp) == {"shutting_down": True, "phase": "SUCCEEDED"}  # tfmesos kill says it had ended
        assert ended.is_set() and not stopped, "shutdown ends the serving, not the (ended) job"
    finally:
        api.stop()


def test_a_follower_reading_at_the_end_gets_one_more_read_before_the_api_goes() -> None:
    logs = TaskLogs(lambda task: [], lambda agent: None, lambda: None)
    started = time.monotonic()
    logs.linger()
    assert time.monotonic() - started < 0.5, "nobody was reading: no wait"
    with pytest.raises(LogError):
        logs.read("chief:0", {})  # a follower's poll (its answer does not matter here)
    reader = threading.Timer(0.3, lambda: pytest.raises(LogError, logs.read, "chief:0", {}))
    reader.start()
    started = time.monotonic()
    logs.linger()
    waited = time.monotonic() - started
    reader.join()
    assert 0.2 < waited < 2.0, f"waited {waited:.2f} s: for the follower's next read, not longer"


def test_logs_early_in_a_run_say_why_nothing_is_printed_and_follow_waits_for_the_task(tmp_path) -> None:
    """Before the task starts, and while its log is still empty, `tfmesos logs` says so (on
    stderr) instead of printing nothing; --follow waits for the task and then prints its output."""
    state = {"task": "TASK_STAGING", "launched": False, "data": ""}
    snap = lambda: StatusSnapshot(name="j", phase="RUNNING", tasks=(TaskStatus("chief", 0, state=state["task"]),))

    def read(task: str, query: dict) -> dict:
        if not state["launched"]:
            raise LogError(404, f"{task} has not been launched yet")
        data = state["data"][int(query.get("offset", 0)):]
        return {"task": task, "task_id": "j.chief.0.1", "attempts": ["j.chief.0.1"], "latest": True,
                "size": len(state["data"]), "offset": 0, "next_offset": len(state["data"]), "data": data}

    api = ApiServer(snap, lambda: None, lambda: None, ops=Operations(logs=read))
    api.start()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TFMESOS_API": api.address}
    run = lambda *args: subprocess.run([sys.executable, "-m", "tfmesos.client.cli", "logs", "chief:0", *args],
                                       capture_output=True, text=True, timeout=60, env=env, cwd=ROOT)
    try:
        early = run()
        assert early.returncode == 1
        assert "chief:0 has not been launched yet; the job is still placing or starting it: --follow waits" in early.stderr
        state.update(launched=True, task="TASK_RUNNING")
        empty = run()
        assert (empty.returncode, empty.stdout) == (0, "")
        assert "chief:0's stdout is empty so far (task TASK_RUNNING); --follow waits for what it writes" in empty.stderr
        state.update(launched=False, task="TASK_STAGING")
        follower = subprocess.Popen([sys.executable, "-m", "tfmesos.client.cli", "logs", "chief:0", "--follow"], env=env,
                                    cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert follower.stderr.readline() == "tfmesos logs: waiting for chief:0 to start (job RUNNING, task TASK_STAGING)\n"
            state.update(launched=True, task="TASK_RUNNING", data="hello from the chief\n")
            assert follower.stdout.readline() == "hello from the chief\n"
        finally:
            follower.kill()
            follower.wait(10)
    finally:
        api.stop()


def test_with_zk_the_ends_are_kept_and_listed_from_zookeeper(tmp_path, zk) -> None:
    from tfmesos.store.state_store import ZkStore

    url = f"zk://{zk.hosts}/tfmesos-history"
    store = ZkStore(url, "team/hist")
    try:
        store.keep_end(ended_record(tmp_path, "team/hist"))
    finally:
        store.close()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # A state folder of its own: `jobs` lists this machine's live runs too, and the suite's HOME is
    # shared by the tests of a worker (a run another test killed is listed GONE there).
    cli = lambda *args: subprocess.run([sys.executable, "-m", "tfmesos.client.cli", *args, "--zk", url,
                                        "--state-dir", str(tmp_path / "state")], capture_output=True,
                                       text=True, timeout=60, env=env, cwd=ROOT)
    jobs = cli("jobs")
    assert jobs.returncode == 0 and jobs.stdout.splitlines()[1].startswith("team/hist  SUCCEEDED"), jobs.stderr
    status = cli("status", "team/hist")
    assert status.returncode == 0 and status.stdout.startswith("job team/hist  SUCCEEDED"), status.stderr


def test_logs_of_a_newer_scheduler_says_to_upgrade_rather_than_that_the_job_is_over(monkeypatch) -> None:
    """`tfmesos logs --follow` read a newer status as no status: the job seemed over and it stopped."""
    from tfmesos.client import logs
    from tfmesos.core.status import VERSION
    from tfmesos.errors import UsageError

    original = StatusSnapshot.to_json
    monkeypatch.setattr(StatusSnapshot, "to_json", lambda self: {**original(self), "version": VERSION + 1})
    api = ApiServer(lambda: StatusSnapshot(name="j", phase="RUNNING"), lambda: None, lambda: None)
    api.start()
    try:
        with pytest.raises(UsageError, match="upgrade tfmesos"):
            logs._job_over(api.address)
    finally:
        api.stop()


def test_keep_serving_says_where_even_under_quiet() -> None:
    """-q prints only the job's output and the summary, but --keep-serving's address is its point."""
    from tfmesos.scheduler import after_end as job_end
    from tfmesos.scheduler.console import Console

    out = io.StringIO()
    final = StatusSnapshot(name="j", phase="SUCCEEDED")
    api = ApiServer(lambda: final, lambda: None, lambda: None)
    api.start()
    try:
        job_end.keep_serving(api, final, Operations(), 0.01, Console(out, quiet=True))
    finally:
        api.stop()
    assert f"its status page stays on http://{api.address}/" in out.getvalue()
