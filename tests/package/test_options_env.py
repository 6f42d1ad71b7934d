"""The TFMESOS_OPT_* contract: names, typing by the schema, errors that name variable and path."""
import pytest

from tfmesos.options.load import OptionsError, load_schema, resolve_options
from tfmesos.options.env import env_name, leaf_paths, options_from_env, options_to_env

from tests.package.fixtures import FULL_OPTIONS


def test_names_follow_the_json_path():
    assert env_name(("roles", "worker", "count")) == "TFMESOS_OPT_ROLES_WORKER_COUNT"
    assert env_name(("service", "secret_name")) == "TFMESOS_OPT_SERVICE_SECRET_NAME"
    assert env_name(("job", "uris")) == "TFMESOS_OPT_JOB_URIS"


def test_every_leaf_has_its_own_name():
    names = [env_name(path) for path, _ in leaf_paths()]
    assert len(names) == len(set(names))
    assert ("roles", "evaluator", "max_restarts") in [path for path, _ in leaf_paths()]
    assert all(leaf.get("type") != "object" for _, leaf in leaf_paths())


def test_values_are_typed_by_the_schema():
    env = {
        "TFMESOS_OPT_ROLES_WORKER_COUNT": "3",
        "TFMESOS_OPT_ROLES_WORKER_CPUS": "1.5",
        "TFMESOS_OPT_SERVICE_MEM": "2048",
        "TFMESOS_OPT_SERVICE_FAILOVER_TIMEOUT": "3.0E9",  # how Cosmos writes a Double
        "TFMESOS_OPT_ROLES_PS_SERVER": "FALSE",
        "TFMESOS_OPT_ROLES_WORKER_SERVER": "True",
        "TFMESOS_OPT_JOB_COMMAND": "python3 train.py --x \"1\"",
        "TFMESOS_OPT_JOB_ENV": "A=1\nB=two words\n",
        "TFMESOS_OPT_JOB_URIS": "",
        "TFMESOS_OPT_ROLES_PS_ENV": "X=1",  # the last element may lack its newline
    }
    assert options_from_env(env) == {
        "service": {"mem": 2048, "failover_timeout": 3000000000},
        "job": {"command": "python3 train.py --x \"1\"", "env": ["A=1", "B=two words"], "uris": []},
        "roles": {
            "worker": {"count": 3, "cpus": 1.5, "server": True},
            "ps": {"server": False, "env": ["X=1"]},
        },
    }


def test_absent_variables_leave_the_defaults_and_other_variables_are_ignored():
    options = options_from_env({"PATH": "/bin", "TFMESOS_OPT_ROLES_WORKER_COUNT": "2"})
    assert options == {"roles": {"worker": {"count": 2}}}
    assert resolve_options(options)["roles"]["worker"]["mem"] == 1024


def test_a_bad_value_names_the_variable_and_the_json_path():
    with pytest.raises(OptionsError) as exc:
        options_from_env(
            {
                "TFMESOS_OPT_ROLES_WORKER_COUNT": "two",
                "TFMESOS_OPT_ROLES_PS_SERVER": "yes",
                "TFMESOS_OPT_ROLES_CHIEF_GPUS": "1.5",
                "TFMESOS_OPT_SERVICE_CPUS": "NaN",
            }
        )
    text = "\n".join(exc.value.problems)
    assert "TFMESOS_OPT_ROLES_WORKER_COUNT ($.roles.worker.count): 'two' is invalid: expected an integer" in text
    assert "TFMESOS_OPT_ROLES_PS_SERVER ($.roles.ps.server): 'yes' is invalid: expected true or false" in text
    assert "TFMESOS_OPT_ROLES_CHIEF_GPUS ($.roles.chief.gpus): '1.5' is invalid: expected an integer" in text
    assert "TFMESOS_OPT_SERVICE_CPUS ($.service.cpus): 'NaN' is invalid: expected a number" in text
    assert len(exc.value.problems) == 4


def test_a_misspelt_variable_is_an_error_not_a_silent_default():
    with pytest.raises(OptionsError) as exc:
        options_from_env({"TFMESOS_OPT_ROLES_WORKERS_COUNT": "2"})
    assert exc.value.problems[0].startswith("TFMESOS_OPT_ROLES_WORKERS_COUNT: unknown option variable")


def test_to_env_and_back_is_the_identity():
    env = options_to_env(FULL_OPTIONS)
    assert set(env) == {env_name(path) for path, _ in leaf_paths(load_schema())}
    assert env["TFMESOS_OPT_JOB_ENV"].endswith("\n") and env["TFMESOS_OPT_ROLES_PS_SERVER"] == "false"
    assert options_from_env(env) == FULL_OPTIONS


def test_to_env_refuses_what_it_cannot_carry():
    with pytest.raises(OptionsError, match=r"\$\.job\.uris\[1\]: .*expected no newline"):
        options_to_env({"job": {"uris": ["a", "b\nc"]}})
    with pytest.raises(OptionsError, match=r"\$\.roles\.worker\.count: '2' is invalid: expected integer"):
        options_to_env({"roles": {"worker": {"count": "2"}}})
    with pytest.raises(OptionsError, match=r"\$\.roles\.workers: unknown field"):
        options_to_env({"roles": {"workers": {"count": 2}}})


def test_relative_paths_from_the_environment_are_the_tasks_not_the_scheduler_s(monkeypatch, tmp_path):
    """Under the DC/OS package the scheduler's sandbox is on another agent than the tasks: a relative
    workdir stays relative (each task's sandbox, where job.uris unpack), a relative checkpoint_dir is refused."""
    import argparse

    from tfmesos.client.cli import load_job

    monkeypatch.chdir(tmp_path)  # the scheduler's own sandbox
    for name, value in {"TFMESOS_OPT_JOB_COMMAND": "python train.py", "TFMESOS_OPT_JOB_WORKDIR": "code",
                        "TFMESOS_OPT_ROLES_WORKER_COUNT": "1"}.items():
        monkeypatch.setenv(name, value)
    spec = load_job(argparse.Namespace(options_from_env=True, options=None)).spec
    assert spec.workdir == "code"
    monkeypatch.setenv("TFMESOS_OPT_JOB_CHECKPOINT_DIR", "ckpt")
    with pytest.raises(OptionsError, match=r"\$\.job\.checkpoint_dir: 'ckpt' is relative: expected an absolute path"):
        load_job(argparse.Namespace(options_from_env=True, options=None))
