"""job.secret_env / job.secret_files: how they are read, refused, sent to Mesos and hidden."""
from __future__ import annotations

import base64
import json
import os
import stat

import pytest

from tfmesos.core.actions import TaskLaunch
from tfmesos.core.secrets import SecretSource, SecretUse, SecretValues
from tfmesos.core.spec import Resources, TaskKey
from tfmesos.executor.executor import write_secret_files
from tfmesos.mesos.messages import decode
from tfmesos.mesos.taskinfo import ExecutorSettings, OfferLedger, build_task_info
from tfmesos.options.jobspec import job_spec_from_options
from tfmesos.options.load import OptionsError, resolve_options
from tfmesos.scheduler.preflight import environment_problems, option_problems
from tfmesos.scheduler.secret_values import read_values

OFFER = {"resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": 4}},
                       {"name": "mem", "type": "SCALAR", "scalar": {"value": 4096}},
                       {"name": "ports", "type": "RANGES", "ranges": {"range": [{"begin": 9000, "end": 9010}]}}]}
VALUE = "v4lue-QX19"


def _spec(**job):
    return job_spec_from_options(resolve_options({
        "service": {"name": "sec"}, "job": {"command": "true", **job}, "roles": {"chief": {"count": 1}}}))


def _task_info(spec, secrets=SecretValues()):
    launch = TaskLaunch(TaskKey("chief", 0), "sec.chief.0.1", 9001, Resources(1, 1024), 0)
    return build_task_info(spec, launch, "agent-1", OfferLedger(OFFER), ExecutorSettings("python3", secrets=secrets))


def test_sources_are_a_store_name_a_scheduler_variable_or_a_scheduler_file():
    spec = _spec(secret_env=["A=team-a/aws-key", "B=env:TOKEN"], secret_files=["k/c.json=file:/etc/c.json"])
    assert spec.secrets == (
        SecretUse("A", SecretSource("reference", "team-a/aws-key")),
        SecretUse("B", SecretSource("env", "TOKEN")),
        SecretUse("k/c.json", SecretSource("file", "/etc/c.json"), as_file=True))


@pytest.mark.parametrize("job, said", [
    ({"secret_env": ["1X=env:T"]}, "$.job.secret_env[0]"),
    ({"secret_env": ["X=env:"]}, "$.job.secret_env[0]"),
    ({"secret_env": ["X=has space"]}, "$.job.secret_env[0]"),
    ({"secret_files": ["/etc/passwd=env:T"]}, "$.job.secret_files[0]"),
    ({"secret_files": ["a=b=c"]}, "$.job.secret_files[0]"),
])
def test_a_malformed_item_is_refused_naming_it(job, said):
    with pytest.raises(OptionsError) as err:
        resolve_options({"service": {"name": "sec"}, "job": job})
    assert said in str(err.value)


@pytest.mark.parametrize("job, said", [
    ({"secret_env": ["TF_CONFIG=env:T"]}, "$.job.secret_env: TF_CONFIG is set by tfmesos"),
    ({"secret_env": ["TFMESOS_X=env:T"]}, "$.job.secret_env: TFMESOS_X is set by tfmesos"),
    ({"secret_env": ["A=env:T"], "env": ["A=1"]}, "$.job.secret_env: A is set by $.job.env too"),
    ({"secret_env": ["A=env:T", "A=env:U"]}, "$.job.secret_env: A is given twice"),
    ({"secret_files": ["k=env:T", "k=env:U"]}, "$.job.secret_files: k is given twice"),
    ({"secret_files": ["a/../../x=env:T"]}, "$.job.secret_files: 'a/../../x' is not a plain relative path"),
    ({"secret_files": ["keys/=env:T"]}, "$.job.secret_files: 'keys/' is not a plain relative path"),
    ({"secret_files": ["stdout=env:T"]}, "$.job.secret_files: 'stdout' would replace the sandbox's own"),
    ({"secret_files": ["clusterspec.json=env:T"]}, "would replace the sandbox's own 'clusterspec.json'"),
])
def test_targets_that_cannot_work_are_refused_naming_the_field(job, said):
    problems = option_problems(_spec(**job))
    assert any(said in p for p in problems), problems


def test_values_that_cannot_be_read_are_refused_naming_the_source_never_a_value(tmp_path):
    binary = tmp_path / "bin"
    binary.write_bytes(b"a\x00b")
    big = tmp_path / "big"
    big.write_bytes(b"x" * (64 * 1024 + 1))
    spec = _spec(secret_env=["A=env:MISSING", "B=file:/nonexistent/x", f"C=file:{binary}", "D=env:SET"],
                 secret_files=[f"d=file:{tmp_path}", f"e=file:{big}"])
    problems, _ = environment_problems(spec, {"SET": VALUE}, embedded=False, create=False)
    assert [p.split(":")[0] for p in problems] == ["$.job.secret_env A=env", "$.job.secret_env B=file",
                                                   "$.job.secret_env C=file", "$.job.secret_files d=file",
                                                   "$.job.secret_files e=file"]
    assert "has no MISSING" in problems[0] and "No such file" in problems[1]
    assert "NUL byte" in problems[2] and "not a regular file" in problems[3]
    assert "holds 65537 bytes; expected at most 65536" in problems[4]
    assert not any(VALUE in p for p in problems)


def test_a_store_name_is_refused_on_the_embedded_master_whose_agents_cannot_resolve_it():
    spec = _spec(secret_env=["A=team/key"])
    problems, _ = environment_problems(spec, {}, embedded=True, create=False)
    assert any("$.job.secret_env A=team/key: a secret store's name" in p for p in problems), problems
    assert environment_problems(spec, {}, embedded=False, create=False)[0] == []


def test_store_names_go_to_mesos_as_references_on_the_executor():
    info = _task_info(_spec(secret_env=["A=team/a"], secret_files=["k/b=team/b"], volumes=["/d:/d:ro"]))
    executor = info["executor"]
    assert executor["command"]["environment"] == {"variables": [
        {"name": "A", "type": "SECRET", "secret": {"type": "REFERENCE", "reference": {"name": "team/a"}}}]}
    assert executor["container"]["volumes"][1:] == [{"container_path": "k/b", "mode": "RO", "source": {
        "type": "SECRET", "secret": {"type": "REFERENCE", "reference": {"name": "team/b"}}}}]
    assert "command" not in info and "container" not in info


def test_values_ride_in_the_payload_and_nowhere_else_in_the_task_info(tmp_path):
    secret_file = tmp_path / "f"
    secret_file.write_bytes(b"\x00\xffbin")
    spec = _spec(secret_env=["A=env:TOKEN"], secret_files=[f"k/f=file:{secret_file}"])
    values = read_values(spec.secrets, {"TOKEN": VALUE})
    assert VALUE not in repr(values) and "A" in repr(values)
    info = _task_info(spec, values)
    payload = decode(info["data"])
    assert payload.secret_env == {"A": VALUE}
    assert base64.b64decode(payload.secret_files["k/f"]) == b"\x00\xffbin"
    assert VALUE not in repr(payload)
    rest = json.dumps({k: v for k, v in info.items() if k != "data"})
    assert VALUE not in rest and "SECRET" not in rest
    with pytest.raises(ValueError, match="A, k/f were not read"):  # never launched without them
        _task_info(spec)


def test_the_executor_links_secret_files_from_the_sandbox_to_its_own_directory(tmp_path):
    from tfmesos.executor.executor import remove_secret_files

    sandbox, shm = tmp_path / "sandbox", tmp_path / "shm"
    sandbox.mkdir()
    shm.mkdir()
    old = os.umask(0)  # the modes are the executor's, whatever umask it inherits
    try:
        private = write_secret_files(str(sandbox), {"keys/k": base64.b64encode(b"\x00x").decode()}, str(shm))
    finally:
        os.umask(old)
    link = sandbox / "keys" / "k"
    assert link.is_symlink() and link.read_bytes() == b"\x00x"
    target = link.resolve()
    assert target.parent.parent == shm / os.path.basename(private)  # outside the sandbox
    assert stat.S_IMODE(target.stat().st_mode) == 0o600 and stat.S_IMODE(os.stat(private).st_mode) == 0o700
    remove_secret_files(private)
    assert not os.path.exists(private) and not link.exists()  # the task is over: nothing is kept
    (sandbox / "evil").symlink_to("/etc")
    with pytest.raises(OSError, match="outside the sandbox"):
        write_secret_files(str(sandbox), {"evil/x": ""}, str(shm))
    assert list(shm.iterdir()) == [], "a refused write leaves nothing behind"


def test_the_dry_run_shows_what_goes_where_with_every_value_hidden(tmp_path):
    from tfmesos.client.dry_run import dry_run_document

    options = resolve_options({"service": {"name": "sec"}, "roles": {"chief": {"count": 1}},
                               "job": {"command": "true", "secret_env": ["A=env:TOKEN", "R=team/r"],
                                       "secret_files": ["k=env:TOKEN"]}})
    doc = dry_run_document(options, job_spec_from_options(options), show_env_values=True)
    assert doc["payloads"][0]["secret_env"] == {"A": "<hidden>"}
    assert base64.b64decode(doc["payloads"][0]["secret_files"]["k"]) == b"<hidden>"
    assert doc["task_infos"][0]["executor"]["command"]["environment"]["variables"][0]["name"] == "R"
    assert doc["options"]["job"]["secret_env"] == ["A=env:TOKEN", "R=team/r"]  # names, not values


def test_a_relative_file_source_is_taken_from_the_options_files_folder(tmp_path):
    from tfmesos.client.job_options import _absolute_paths
    from tfmesos.options.jobspec import job_spec_from_options
    from tfmesos.options.load import resolve_options

    options = resolve_options({"service": {"name": "sec"}, "roles": {"chief": {"count": 1}}, "job": {
        "command": "true", "secret_env": ["A=file:token", "B=env:T", "C=file:/abs"], "secret_files": ["k=file:~/x"]}})
    _absolute_paths(options, tmp_path)  # what `tfmesos run` does with the options file's folder
    spec = job_spec_from_options(options)
    assert [str(u.source) for u in spec.secrets] == [f"file:{tmp_path / 'token'}", "env:T", "file:/abs", "file:~/x"]
