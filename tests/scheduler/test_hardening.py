"""Bad inputs through the real ``tfmesos`` command: every one ends fast, non-zero, with a plain
message naming the field, flag or file, no traceback, and nothing left running or behind.

Each case runs ``python -m tfmesos.client.cli`` in its own session with its own TMPDIR: afterwards no
process of that session may be alive and the TMPDIR must be empty (the embedded master's work
directory, temporary state files). Unreachable parties use ports nobody listens on and a small
``--connect-timeout``.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

ROOT = Path(__file__).resolve().parents[2]
GOOD = {"job": {"command": "true"}, "roles": {"worker": {"count": 1}}}


@dataclass
class Case:
    name: str
    args: list[str]  # {opts} is replaced by the options file, {tmp} by the case's folder
    expect: list[str]  # each must appear in stderr
    code: int = 2
    options: object = field(default_factory=lambda: GOOD)  # dict, or bytes written as they are
    suffix: str = ".json"
    env: dict[str, str] = field(default_factory=dict)
    within: float = 15.0  # loose: a case that hangs or waits a default timeout fails
    setup: Callable[[Path], None] | None = None


def _with(**changes: object) -> dict:
    """GOOD with nested changes given as ``job__env=[...]`` (``__`` separates levels)."""
    out = json.loads(json.dumps(GOOD))
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        node = out
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    return out


def _fifo(tmp: Path) -> None:
    os.mkfifo(tmp / "fifo.json")


def _file_as_state_dir(tmp: Path) -> None:
    (tmp / "state").write_text("not a directory")


RUN = ["run", "{opts}", "--state-dir", "{tmp}/state"]
CASES = [
    Case("latin-1 file", RUN, ["not UTF-8", "line 1"], options='{"job": {"command": "caf\xe9"}}'.encode("latin-1")),
    Case("directory", ["run", "{tmp}"], ["is a directory"]),
    Case("fifo", ["run", "{tmp}/fifo.json"], ["not a regular file"], setup=_fifo),
    Case("too large", RUN, ["expected an options file of at most 1048576 bytes"], options=b" " * (1 << 20 + 1) + b"{}"),
    Case("nested too deep", RUN, ["nested too deep"], options=b"[" * 100000 + b"]" * 100000),
    Case("nested deep", RUN, ["nested too deep", "$[0][0]"], options=b"[" * 40 + b"]" * 40),
    Case("duplicate keys", RUN, ["duplicate key 'job'"], options=b'{"job": {}, "job": {}}'),
    Case("NaN", RUN, ["NaN", "finite"], options=b'{"service": {"failover_timeout": NaN}}'),
    Case("overflow to infinity", RUN, ["$.service.failover_timeout", "finite"], options=b'{"service": {"failover_timeout": 1e400}}'),
    Case("yaml duplicate", RUN, ["line 3", "duplicate key 'job'"], options=b"job: {}\nroles: {}\njob: {}\n", suffix=".yaml"),
    Case("yaml schema error has its line", RUN, ["$.roles.worker.count", "options.yaml line 5"],
         options=b"job:\n  command: x\nroles:\n  worker:\n    count: '2'\n", suffix=".yaml"),
    Case("yaml syntax", RUN, ["not valid YAML", "line"], options=b"job: [\n", suffix=".yml"),
    Case("long value cut", RUN, ["$.roles.worker.count", "characters)"], options=_with(roles__worker__count="x" * 900_000)),
    Case("unknown placeholder", RUN, ["$.job.command: placeholder {task_idx} does not exist"], options=_with(job__command="run {task_idx}")),
    Case("TF_CONFIG in env", RUN, ["$.job.env", "TF_CONFIG"], options=_with(job__env=["TF_CONFIG={}"])),
    Case("TFMESOS_ in role env", RUN, ["$.roles.worker.env", "TFMESOS_PORT"], options=_with(roles__worker__env=["TFMESOS_PORT=1"])),
    Case("env value hidden", RUN, ["$.job.env[0]", "1A=<hidden>"], options=_with(job__env=["1A=hunter2"])),
    Case("MESOS_SECRET without principal", RUN, ["MESOS_SECRET", "$.service.principal"], env={"MESOS_SECRET": "hunter2"}),
    Case("task id too long", RUN, ["$.service.name", "Mesos refuses ids longer than 255"], options=_with(service__name="a" * 250)),
    Case("failover_timeout out of range", RUN, ["$.service.failover_timeout", "9223372036"], options=_with(service__failover_timeout=1e12)),
    Case("command on a built-in server", RUN, ["$.roles.ps.command", "'python ps.py'", "the default for ps",
                                                 "\"server\": false"],
         options=_with(roles__ps__count=1, roles__ps__command="python ps.py")),
    Case("Always on a worker", RUN, ["$.roles.worker.restart_policy", "Always"], options=_with(roles__worker__restart_policy="Always")),
    Case("image on the embedded master", ["run", "{opts}"], ["$.job.image"], options=_with(job__image="tensorflow/tensorflow")),
    Case("user on the embedded master", ["run", "{opts}"], ["$.service.user"], options=_with(service__user="nobody-else")),
    Case("task larger than an agent", ["run", "{opts}"], ["$.roles.worker.cpus", "--agent-cpus"], options=_with(roles__worker__cpus=8)),
    Case("job larger than the cluster", ["run", "{opts}", "--agents", "2"], ["$.roles", "--agents"],
         options=_with(roles__worker__count=3, roles__worker__cpus=3)),
    Case("no agents", ["run", "{opts}", "--agents", "0"], ["--agents", "at least 1"]),
    Case("checkpoint_dir is a file", ["run", "{opts}"], ["$.job.checkpoint_dir", "is a file"],
         options=_with(job__checkpoint_dir="ckpt"), setup=lambda tmp: (tmp / "ckpt").write_text("")),
    Case("state dir is a file", ["run", "{opts}", "--state-dir", "{tmp}/state"], ["--state-dir", "is a file"], setup=_file_as_state_dir),
    Case("zk path not zk://", ["run", "{opts}", "--zk", "http://127.0.0.1:2181/x"], ["--zk", "expected zk://"]),
    Case("bad connect timeout", ["run", "{opts}", "--connect-timeout", "abc"], ["--connect-timeout", "expected seconds"]),
    Case("master garbage", RUN + ["--master", "http//"], ["--master", "'http//'"]),
    Case("master https", RUN + ["--master", "https://127.0.0.1:5050"], ["--master", "plain HTTP"]),
    Case("master unreachable", RUN + ["--master", "127.0.0.1:1", "--connect-timeout", "1.5"],
         ["Mesos master at 127.0.0.1:1", "connection refused", "--master"], code=3),
    Case("master unknown host", RUN + ["--master", "no-such-host.invalid:5050", "--connect-timeout", "1.5"],
         ["no-such-host.invalid:5050", "unknown host"], code=3),
    Case("zk master unreachable", RUN + ["--master", "zk://127.0.0.1:1/mesos", "--connect-timeout", "1.5"],
         ["ZooKeeper at 127.0.0.1:1", "--master"], code=3),
    Case("zk state unreachable", ["run", "{opts}", "--zk", "zk://127.0.0.1:1/x", "--connect-timeout", "1.5"],
         ["ZooKeeper at 127.0.0.1:1", "--zk"], code=3),
    Case("status bad address", ["status", "--api", "host:abc"], ["--api", "'host:abc'"]),
    Case("status unreachable", ["status", "--api", "127.0.0.1:1", "--connect-timeout", "1"], ["scheduler API at 127.0.0.1:1"], code=3),
    Case("status no api", ["status"], ["--api"], env={"TFMESOS_API": ""}),
    # An unknown flag is named with its command's own usage (run's parser is built alone for a run).
    Case("unknown run flag", RUN + ["--bogus"], ["usage: tfmesos run", "--keep-serving", "unrecognized arguments: --bogus"]),
    Case("image in a dry run on the embedded master", ["run", "{opts}", "--dry-run"], ["$.job.image"],
         options=_with(job__image="tensorflow/tensorflow")),
    Case("a dry run's flag without --dry-run", RUN + ["--output", "json"],
         ["warning: --output changes nothing without --dry-run"], code=0),
    Case("api port out of range", RUN + ["--api-port", "70000"], ["--api-port", "'70000'", "65535"]),
    Case("unknown status flag", ["status", "--bogus"], ["usage: tfmesos status", "unrecognized arguments: --bogus"]),
]


def _run_case(case: Case, tmp: Path, extra_args: list[str] = ()) -> tuple[subprocess.CompletedProcess, float, list[int]]:
    tmp.mkdir(parents=True, exist_ok=True)
    opts = tmp / f"options{case.suffix}"
    data = case.options if isinstance(case.options, bytes) else json.dumps(case.options).encode()
    opts.write_bytes(data)
    if case.setup:
        case.setup(tmp)
    scratch = tmp / "scratch"
    scratch.mkdir()
    args = [a.replace("{opts}", str(opts)).replace("{tmp}", str(tmp)) for a in case.args] + list(extra_args)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(scratch), "HOME": str(tmp), **case.env}
    env.pop("MESOS_SECRET", None) if "MESOS_SECRET" not in case.env else None
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "tfmesos.client.cli", *args], cwd=tmp, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=case.within + 30)
        elapsed = time.monotonic() - t0
        left = _session_alive(proc.pid)  # anything the command started that outlived it
    finally:
        _kill_session(proc.pid)
    return subprocess.CompletedProcess(args, proc.returncode, out, err), elapsed, left


def _session_alive(sid: int) -> list[int]:
    alive = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == sid and fields[0] != "Z":  # field 6 of stat: the session id
                alive.append(int(entry.name))
    return alive


def _kill_session(sid: int) -> None:
    try:
        os.killpg(sid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_bad_input_ends_fast_and_plainly(case: Case, tmp_path: Path):
    result, elapsed, left = _run_case(case, tmp_path)
    err = result.stderr
    assert result.returncode == case.code, (result.returncode, err, result.stdout)
    for text in case.expect:
        assert text in err, (text, err)
    assert "Traceback" not in err + result.stdout
    assert "hunter2" not in err + result.stdout
    assert len(err) < 4000, err[:4000]
    assert elapsed < case.within, elapsed
    assert left == [], "processes left running"
    assert list((tmp_path / "scratch").iterdir()) == [], "temporary files left behind"
    if (tmp_path / "state").is_dir():
        assert not [p for p in (tmp_path / "state").iterdir() if p.name.startswith(".state-")]


def test_api_port_in_use_is_named(tmp_path: Path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        case = Case("api port", ["run", "{opts}", "--api-port", str(port)], ["--api-port", f"127.0.0.1:{port}"])
        result, _, _ = _run_case(case, tmp_path)
    assert result.returncode == 2 and all(t in result.stderr for t in case.expect), result.stderr
    assert "Traceback" not in result.stderr
    assert list((tmp_path / "scratch").iterdir()) == []


def test_verbose_shows_the_traceback_of_an_unexpected_error(tmp_path: Path):
    """-v is the way to the details: the one-line form says so, -v prints the traceback."""
    state = tmp_path / "state"
    state.mkdir()
    (state / "tfmesos.json").write_text("{cut short")
    case = Case("corrupt state", ["run", "{opts}", "--state-dir", str(state)], ["unreadable", "remove it"])
    result, _, _ = _run_case(case, tmp_path / "a")
    assert result.returncode == 2 and all(t in result.stderr for t in case.expect), result.stderr
    assert "Traceback" not in result.stderr
    result, _, _ = _run_case(case, tmp_path / "b", extra_args=["-v"])
    assert "Traceback" in result.stderr and "unreadable" in result.stderr


def test_dry_run_hides_env_values_and_yaml_gives_the_same_json(tmp_path: Path):
    yaml_text = "job:\n  command: python train.py\n  env: [TOKEN=hunter2]\nroles:\n  worker:\n    count: 2\n" \
                "    env: ['PW=hunter2']\nservice:\n  failover_timeout: 1e5\n"
    (tmp_path / "job.yaml").write_text(yaml_text)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = [sys.executable, "-m", "tfmesos.client.cli", "run", "--dry-run"]
    text = subprocess.run(run + [str(tmp_path / "job.yaml")], env=env, capture_output=True, text=True, check=True).stdout
    assert "TOKEN=<hidden>" in text and "PW=<hidden>" in text and "hunter2" not in text
    shown = subprocess.run(run + [str(tmp_path / "job.yaml"), "--output", "options", "--show-env-values"], env=env,
                           capture_output=True, text=True, check=True).stdout
    as_json = json.loads(shown)
    assert as_json["job"]["env"] == ["TOKEN=hunter2"] and as_json["service"]["failover_timeout"] == 1e5
    (tmp_path / "job.json").write_text(shown)
    again = subprocess.run(run + [str(tmp_path / "job.json"), "--output", "options", "--show-env-values"], env=env,
                           capture_output=True, text=True, check=True).stdout
    assert json.loads(again) == as_json


def test_principal_without_secret_is_only_a_warning(tmp_path: Path):
    """Legal where the master does not authenticate: warned about, not refused."""
    case = Case("principal", ["run", "{opts}", "--dry-run", "--master", "127.0.0.1:1"], [],
                options=_with(service__principal="team-a"))
    result, _, left = _run_case(case, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "warning: $.service.principal 'team-a' without MESOS_SECRET" in result.stderr and left == []


def test_a_master_that_never_answers_is_given_up_at_the_connect_timeout(tmp_path: Path):
    """A black hole (the port accepts, nothing answers): no per-call day-long wait."""
    with socket.socket() as hole:
        hole.bind(("127.0.0.1", 0))
        hole.listen(16)  # never accepted: the kernel completes the handshake, nobody replies
        where = f"127.0.0.1:{hole.getsockname()[1]}"
        case = Case("black hole", RUN + ["--master", where, "--connect-timeout", "2"], [f"Mesos master at {where}", "no answer"])
        result, elapsed, left = _run_case(case, tmp_path)
    assert result.returncode == 3 and all(t in result.stderr for t in case.expect), result.stderr
    assert elapsed < 12 and left == [] and "Traceback" not in result.stderr
