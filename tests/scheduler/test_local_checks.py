"""Local checks (options, checkpoint dir, state dir) all run before any wait for the network, and
a checkpoint directory that cannot be made is refused naming the field."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tfmesos.options.load import resolve_options
from tfmesos.scheduler.preflight import environment_problems, state_dir_of
from tfmesos.options.jobspec import job_spec_from_options

TFMESOS = [sys.executable, "-m", "tfmesos.client.cli"]
UNREACHABLE = "127.0.0.1:1"  # nothing listens on port 1: a run would retry it for --connect-timeout


def _options(tmp_path: Path, **job) -> Path:
    path = tmp_path / "o.json"
    path.write_text(json.dumps({"job": {"command": "true", **job}, "roles": {"chief": {"count": 1}}}))
    return path


def _run(*args: str) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    out = subprocess.run(TFMESOS + ["run", *args, "--connect-timeout", "30"], capture_output=True, text=True, timeout=120)
    return out, time.monotonic() - started


def test_a_state_dir_that_is_a_file_is_said_before_waiting_for_the_master(tmp_path):
    (tmp_path / "state").write_text("")
    out, took = _run(str(_options(tmp_path)), "--master", UNREACHABLE, "--state-dir", str(tmp_path / "state"))
    assert out.returncode == 2, out.stderr
    assert "--state-dir" in out.stderr and "is a file" in out.stderr
    assert took < 20, f"took {took:.1f} s: it waited for the master first"


@pytest.mark.parametrize("master", [[], ["--master", UNREACHABLE]], ids=["embedded", "cluster"])
def test_a_checkpoint_dir_under_proc_is_refused_at_once(tmp_path, master):
    out, took = _run(str(_options(tmp_path, checkpoint_dir="/proc/tfmesos-ckpt")), *master)
    assert out.returncode == 2, out.stderr
    assert "$.job.checkpoint_dir: '/proc/tfmesos-ckpt'" in out.stderr and "kernel file system" in out.stderr
    assert took < 20


def _spec(**job):
    return job_spec_from_options(resolve_options({"job": {"command": "true", **job}, "roles": {"chief": {"count": 1}}}))


def test_an_embedded_checkpoint_dir_that_cannot_be_made_is_refused_and_a_good_one_is_made(tmp_path):
    (tmp_path / "file").write_text("")
    problems, _ = environment_problems(_spec(checkpoint_dir=str(tmp_path / "file" / "ckpt")), {}, embedded=True)
    assert problems and problems[0].startswith(f"$.job.checkpoint_dir: '{tmp_path / 'file' / 'ckpt'}' cannot be created")
    good = tmp_path / "a" / "b"
    assert environment_problems(_spec(checkpoint_dir=str(good)), {}, embedded=True) == ([], [])
    assert good.is_dir()


def test_on_a_cluster_an_unwritable_checkpoint_dir_is_only_a_warning(tmp_path):
    (tmp_path / "file").write_text("")
    problems, warnings = environment_problems(_spec(checkpoint_dir=str(tmp_path / "file")), {}, embedded=False)
    assert problems == [f"$.job.checkpoint_dir: '{tmp_path / 'file'}' is a file: expected a directory"]
    problems, warnings = environment_problems(_spec(checkpoint_dir="/nonexistent-root-dir/ckpt"), {}, embedded=False)
    assert not problems and not Path("/nonexistent-root-dir").exists()


def test_which_state_dir_a_run_uses():
    spec = _spec()
    assert state_dir_of(spec, None, "", "") is None  # embedded, nothing asked: no state kept
    assert state_dir_of(spec, None, "/s", "") == ("/s", "--state-dir")
    assert state_dir_of(spec, "m:5050", "", "zk://z:2181/t") is None
    directory, flag = state_dir_of(spec, "m:5050", "", "")
    assert directory.endswith("/.tfmesos/state") and flag == "$.service.state_dir"


def test_a_state_dir_flag_wins_over_the_options_zookeeper(tmp_path):
    """--state-dir on the command line keeps the state there, though the file names a ZooKeeper
    (the run used to go to that ZooKeeper, and waited --connect-timeout for one that was down)."""
    import dataclasses

    from tfmesos.scheduler.preflight import state_zk

    spec = _spec()
    spec = dataclasses.replace(spec, service=dataclasses.replace(spec.service, zk="zk://127.0.0.1:1/file"))
    assert state_zk(spec, "/s", "") == "" and state_dir_of(spec, "m:5050", "/s", "") == ("/s", "--state-dir")
    assert state_zk(spec, "", "") == "zk://127.0.0.1:1/file" and state_dir_of(spec, "m:5050", "", "") is None
    assert state_zk(spec, "/s", "zk://z:2181/flag") == "zk://z:2181/flag"
    options = json.loads(_options(tmp_path).read_text())
    (tmp_path / "o.json").write_text(json.dumps({**options, "service": {"zk": "zk://127.0.0.1:1/file"}}))
    out, took = _run(str(tmp_path / "o.json"), "--state-dir", str(tmp_path / "state"))
    assert out.returncode == 0, out.stderr
    assert took < 25, f"{took:.1f} s: it waited for the options' ZooKeeper"
    assert (tmp_path / "state" / "history").is_dir(), "the job's end is kept in --state-dir"


def test_a_dry_run_makes_no_checkpoint_directory(tmp_path):
    """--dry-run launches nothing and leaves nothing: the checkpoint directory a run would make is checked only."""
    out, _ = _run(str(_options(tmp_path, checkpoint_dir=str(tmp_path / "ckpt"))), "--dry-run")
    assert out.returncode == 0, out.stderr
    assert not (tmp_path / "ckpt").exists()
    out, _ = _run(str(_options(tmp_path, checkpoint_dir=str(tmp_path / "ckpt"))))
    assert out.returncode == 0 and (tmp_path / "ckpt").is_dir(), out.stderr


def test_the_api_is_announced_where_it_listens_whatever_host_the_shell_exports(tmp_path):
    """HOST names the agent under Marathon, where the API listens on every interface; a shell that
    exports its own HOST does not rename an API bound to 127.0.0.1."""
    import os

    out = subprocess.run(TFMESOS + ["run", str(_options(tmp_path))], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "HOST": "elsewhere.invalid"})
    assert out.returncode == 0, out.stderr
    assert re.search(r"scheduler API on http://127\.0\.0\.1:\d+/v1/status", out.stdout), out.stdout


def test_secrets_that_cannot_be_sent_are_refused_without_being_quoted(tmp_path):
    spec = job_spec_from_options(resolve_options({"service": {"principal": "p"}, "job": {"command": "true"},
                                                  "roles": {"chief": {"count": 1}}}))
    problems, _ = environment_problems(spec, {"MESOS_SECRET": "s3cr\u00e9t"}, embedded=False)
    assert any("MESOS_SECRET holds a character that is not ASCII" in p for p in problems), problems
    problems, _ = environment_problems(spec, {"MESOS_SECRET": "ok", "TFMESOS_API_TOKEN": "tok\rS3CRET"}, embedded=False)
    assert any("TFMESOS_API_TOKEN: the token holds a control character" in p for p in problems), problems
    assert not any("S3CRET" in p or "s3cr" in p for p in problems)
    # A token from a file ends in a newline: not part of it, on the scheduler's side or the client's.
    assert environment_problems(spec, {"MESOS_SECRET": "ok", "TFMESOS_API_TOKEN": "tok\n"}, embedded=False) == ([], [])
    out = subprocess.run(TFMESOS + ["status", "--api", "127.0.0.1:1", "--connect-timeout", "1"], capture_output=True,
                         text=True, timeout=60, env={**os.environ, "TFMESOS_API_TOKEN": "tok-S3CRET\nX"})
    assert out.returncode == 2 and "S3CRET" not in out.stdout + out.stderr, out.stderr
    assert "TFMESOS_API_TOKEN: the token holds a control character" in out.stderr


def test_a_service_name_the_state_store_cannot_keep_is_refused_naming_the_field():
    from tfmesos.scheduler.preflight import option_problems

    def problems(name: str) -> list[str]:
        return option_problems(job_spec_from_options(resolve_options({"service": {"name": name},
                                                                      "job": {"command": "true"},
                                                                      "roles": {"chief": {"count": 1}}})))

    # ZooKeeper keeps job 'team' at team/state, its journal at team/state-journal: a job named
    # 'team/state-journal' had its record deleted by team's every save.
    for name in ("team/state", "team/state-journal", "org/history/x"):
        assert any(p.startswith(f"$.service.name: '{name}' has a segment named") for p in problems(name)), name
    assert problems("team/stateful") == []
    # '/' is '__' in the state directory's file names, which file systems cap at 255 bytes.
    long = "/".join(["ab"] * 70)  # 209 characters, 277 in a file name
    assert any("make the state directory's file names" in p for p in problems(long)), problems(long)


@pytest.mark.parametrize("options, problem", [
    ({"service": {"name": "t1\n"}}, "$.service.name: holds a line break: expected one line"),
    ({"job": {"command": "true", "uris": ["http://b\nhttp://c"]}}, "$.job.uris[0]: holds a line break"),
    ({"job": {"command": "true", "env": ["A=1", "A=2"]}}, "$.job.env: A is given twice: expected each variable once"),
    ({"roles": {"worker": {"count": 1, "server": True}}, "job": {"command": "true"}},
     "$.roles.worker.server: worker:0 decides the job's success"),
    ({"roles": {"worker": {"count": 10**11}}, "job": {"command": "true"}}, "$.roles: 100000000000 tasks: expected at most"),
])
def test_options_that_would_fail_late_or_never_end_are_refused_naming_the_field(options, problem):
    """Each of these passed the schema (an audit): a line break that '$' lets through fails at
    Mesos or splits a DC/OS array item in two; a second value of a variable silently won; a
    success task running the server never ends; a count of 10^11 hung the dry run."""
    from tfmesos.options.load import deep_merge
    from tfmesos.scheduler.preflight import option_problems

    base = {"job": {"command": "true"}, "roles": {"chief": {"count": 1}}}
    merged = deep_merge(base, options) if "roles" not in options else {**base, **options}
    found = option_problems(job_spec_from_options(resolve_options(merged)))
    assert any(p.startswith(problem) for p in found), found


@pytest.mark.parametrize("text, problem", [
    ('job: {command: "true"}\nroles: {chief: {count: 1, mem: 01024}}\n', '$.roles.chief.mem: "01024" is invalid'),
    ('job: {command: "true"}\nroles: {chief: {count: 1, mem: 0x400}}\n', '$.roles.chief.mem: "0x400" is invalid'),
    ('job: {command: "true"}\nroles: {chief: {count: 1}}\n"x[a:b": 1\n', "$.x[a:b: unknown field"),
    ('{"job": {"command": "true"}, "roles": {"chief": {"count": 1, "cpus": 1' + "0" * 40 + '}}}',
     "$.roles.chief.cpus: 1000"),
])
def test_file_values_yaml_reads_unlike_json_or_too_large_are_refused(tmp_path, text, problem):
    """YAML 1.1 read mem: 01024 as octal (a 532 MB task) and 0x400 as hex; a key with '[' and ':'
    hung the YAML line lookup of the error; a 41-digit number overflowed a float (a traceback)."""
    from tfmesos.options.load import OptionsError, load_options_file

    path = tmp_path / ("o.json" if text.startswith("{") else "o.yaml")
    path.write_text(text)
    with pytest.raises(OptionsError) as refused:
        load_options_file(path)
    assert any(p.startswith(problem) for p in refused.value.problems), refused.value.problems


def test_embedded_agents_promising_more_than_the_machine_has_are_warned_about(tmp_path):
    """--agent-mem/--agent-cpus beyond this machine (issue 32): a warning naming the flag, at once."""
    from tfmesos.options.jobspec import job_spec_from_options
    from tfmesos.options.load import resolve_options
    from tfmesos.scheduler.preflight import oversold_warnings
    from tfmesos.scheduler.run_settings import RunSettings

    spec = job_spec_from_options(resolve_options({"service": {"name": "big"}, "job": {"command": "true"},
                                                  "roles": {"worker": {"count": 2, "mem": 3000}}}))
    assert oversold_warnings(spec, RunSettings(), 16384, 8) == [], "the defaults on a machine that holds them"
    (mem, cpus) = oversold_warnings(spec, RunSettings(agent_mem=65536, agent_cpus=16), 16384, 8)
    assert mem.startswith("--agent-mem: 2 embedded agent(s) x 65536 promise 131072 MB memory, and this machine "
                          "has 16384") and cpus.startswith("--agent-cpus: 2 embedded agent(s) x 16 promise 32 cpus")
    (job,) = oversold_warnings(spec, RunSettings(), 4096, 8)
    assert job.startswith("$.roles: the job's tasks ask for 6128 MB memory in all")
    options = tmp_path / "o.json"
    options.write_text('{"service": {"name": "big"}, "job": {"command": "true"}, "roles": {"worker": {"count": 1}}}')
    done = subprocess.run([sys.executable, "-m", "tfmesos.client.cli", "run", str(options), "--dry-run",
                           "--agent-mem", "9000000"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "tfmesos: warning: --agent-mem: 2 embedded agent(s) x 9000000 promise" in done.stderr
