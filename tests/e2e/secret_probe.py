"""One job given two secrets (a variable from the scheduler's environment, a file the scheduler reads),
run by ``tfmesos run`` against a master (the embedded one or a real Mesos): its chief checks it
received both (printing only whether they matched) and holds until the probe is done, while the
probe looks for each value, and its base64, everywhere else it could leak: the console, the API
(/v1/status, /v1/logs), the status page, ``--dry-run``, the kept record, the master's /state,
/tasks, /frameworks and operator API (GET_STATE, GET_EXECUTORS, GET_TASKS), the sandboxes' logs
(our executor's and the task's) and the masters' and agents' logs. (Not the agent's own
checkpoint of the TaskInfo, root's on the agent that writes the secret into the sandbox anyway.)
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import shlex
import stat
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Callable, Iterator

from tests.e2e.harness import ROOT, TFMESOS, run_scheduler, stop_scheduler, write_options

SECRET_FILE = "keys/token"  # under the task's sandbox
# The chief: both secrets as expected (compared by hash: the command is in the options), the file
# 0600 (a link from the sandbox to the executor's own directory), then it waits for the probe to
# finish (the test touches GATE).
CHECK = ("import hashlib, os, stat, sys, time\n"
         "env = os.environ.get('TEAM_TOKEN', '')\n"
         "path = os.path.join(os.environ['MESOS_SANDBOX'], 'keys/token')\n"
         "data = open(path, 'rb').read()\n"
         "ok = hashlib.sha256(env.encode()).hexdigest() == os.environ['WANT_ENV'] and "
         "hashlib.sha256(data).hexdigest() == os.environ['WANT_FILE'] and "
         "stat.S_IMODE(os.stat(path).st_mode) == 0o600\n"
         "print('secrets received' if ok else 'secrets WRONG', flush=True)\n"
         "while not os.path.exists(os.environ['GATE']): time.sleep(0.1)\n"
         "sys.exit(0 if ok else 1)\n")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def needles(value: bytes) -> list[bytes]:
    """The value and its base64 (how Mesos' JSON carries bytes), as found in any text."""
    return [value, base64.b64encode(value)]


def leaks(text: bytes | str, values: list[bytes]) -> list[str]:
    data = text.encode() if isinstance(text, str) else text
    return [repr(n[:12]) for v in values for n in needles(v) if n in data]


def _get(url: str, body: dict | None = None) -> bytes:
    request = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=20) as resp:
        return resp.read()


def _answer(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=20) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def master_views(address: str) -> Iterator[tuple[str, bytes]]:
    """What the master serves of its state (the embedded one: /state only; the rest 404 or 501)."""
    views = [(f"master {path}", f"http://{address}{path}", None) for path in ("/state", "/tasks", "/frameworks")]
    views += [(f"master {call}", f"http://{address}/api/v1", {"type": call})
              for call in ("GET_STATE", "GET_EXECUTORS", "GET_TASKS", "GET_FRAMEWORKS")]
    for where, url, body in views:
        try:
            yield where, _get(url, body)
        except urllib.error.HTTPError as exc:
            if exc.code not in (404, 501) or where == "master /state":
                raise


def files_under(root: Path, names: tuple[str, ...] = ()) -> Iterator[tuple[str, bytes]]:
    """Every file under ``root`` (only those called one of ``names``, when given)."""
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink() and (not names or path.name in names):
            try:
                yield str(path), path.read_bytes()
            except OSError:
                continue


def run_and_probe(tmp_path: Path, master_address: str, agent_dirs: list[Path], log_dirs: list[Path],
                  name: str, master_output: Callable[[], str] = str) -> dict[str, list[str]]:
    """Run the job against ``master_address``; the places where a value was found (none expected),
    after asserting that the chief received both secrets and the job succeeded."""
    env_value = ("env-" + secrets.token_hex(12)).encode()
    file_value = b"file-" + secrets.token_hex(12).encode() + b"\n\x00\xffbinary"
    values = [env_value, file_value]
    secret_file = tmp_path / "token.bin"
    secret_file.write_bytes(file_value)
    gate = tmp_path / "go"
    opts = write_options(
        tmp_path / "o.json", service={"name": name},
        job={"command": f'"$TFMESOS_PYTHON" -c {shlex.quote(CHECK)}',
             "env": [f"WANT_ENV={_sha(env_value)}", f"WANT_FILE={_sha(file_value)}", f"GATE={gate}"],
             "secret_env": ["TEAM_TOKEN=env:TEAM_TOKEN"], "secret_files": [f"{SECRET_FILE}=file:token.bin"]},
        roles={"chief": {"count": 1, "cpus": 0.1, "mem": 64}})
    environ = {**os.environ, "TEAM_TOKEN": env_value.decode(), "PYTHONPATH": str(ROOT)}
    found: dict[str, list[str]] = {}

    def probe(where: str, text: bytes | str) -> None:
        hits = leaks(text, values)
        if hits:
            found[where] = hits

    dry = subprocess.run(TFMESOS + ["run", str(opts), "--dry-run", "--output", "json", "--master", master_address],
                         env=environ, capture_output=True, timeout=120)
    assert dry.returncode == 0, dry.stderr
    assert b'"TEAM_TOKEN": "<hidden>"' in dry.stdout, dry.stdout[-2000:]
    probe("--dry-run", dry.stdout + dry.stderr)

    state_dir = tmp_path / "state"
    run = run_scheduler(opts, "--master", master_address, "--state-dir", str(state_dir), "--keep-serving", "60",
                        env=environ)
    try:
        api = run.wait_for(r"status page on http://(\S+)/", 60).group(1)
        run.wait_for(r"chief:0 \| secrets (received|WRONG)", 120)
        assert "chief:0 | secrets received" in run.output, run.output[-3000:]
        # While the task runs, with its executor live: the master, the API, the page, the files.
        for where, text in master_views(master_address):
            probe(where, text)
        for path in ("/v1/status", "/", "/v1/logs/chief:0"):
            probe(f"API {path}", _get(f"http://{api}{path}"))
        links = [p for d in agent_dirs for p in d.rglob(SECRET_FILE)]
        assert len(links) == 1 and links[0].is_symlink(), links
        assert links[0].read_bytes() == file_value and stat.S_IMODE(links[0].stat().st_mode) == 0o600
        target = links[0].resolve()
        assert not any(target.is_relative_to(d.resolve()) for d in agent_dirs), target  # outside the sandbox
        # The agent's /files API (the web UI's sandbox browser) refuses a link that leaves the sandbox.
        agent = json.loads(_get(f"http://{master_address}/state"))["slaves"][0]["pid"].split("@", 1)[1]
        status, body = _answer(f"http://{agent}/files/read?offset=0&path={urllib.parse.quote(str(links[0]))}")
        assert status in (400, 404), (status, body[:200])
        probe("the agent's /files/read of the secret file", body)
        gate.touch()
        run.wait_for(r"status page stays on http://\S+/ for 60 s", 120)
        assert f"job {name} SUCCEEDED" in run.output, run.output[-3000:]
        for path in ("/v1/status", "/"):
            probe(f"API {path} (ended)", _get(f"http://{api}{path}"))
        assert not target.exists(), "the task is over: its secret files are gone"
        # The owner stops the kept-serving API as a user does: the token the run keeps for it.
        stop = subprocess.run(TFMESOS + ["kill", name, "--state-dir", str(state_dir)], capture_output=True, text=True,
                              timeout=60)
        assert stop.returncode == 0, stop.stderr
        assert run.wait(60) == 0, run.output[-3000:]
    finally:
        stop_scheduler(run)
    probe("console", run.output)
    for where, text in master_views(master_address):
        probe(f"{where} (ended)", text)
    status = subprocess.run(TFMESOS + ["status", name, "--state-dir", str(state_dir), "--json"], env=environ,
                            capture_output=True, timeout=60)
    assert status.returncode == 0 and b"SUCCEEDED" in status.stdout, status.stdout + status.stderr
    probe("tfmesos status NAME", status.stdout + status.stderr)
    for where, text in files_under(state_dir):
        probe(f"kept record {where}", text)
    for directory in agent_dirs:  # the sandboxes' logs: the executor's (ours) and the task's
        for where, text in files_under(directory, ("stdout", "stderr")):
            probe(f"sandbox log {where}", text)
    for directory in log_dirs:
        for where, text in files_under(directory):
            probe(f"log {where}", text)
    probe("the master's output", master_output())
    return found
