"""Options: Cosmos-style defaults and merge, validation messages that name path, value and expectation."""
import json
from pathlib import Path

import jsonschema
import pytest

from tfmesos.options.load import OptionsError, deep_merge, load_options_file, resolve_options
from tfmesos.options.jobspec import job_spec_from_options

ROOT = Path(__file__).resolve().parents[2]
META = ROOT / "tests" / "data" / "dcos" / "config-schema.json"


def problems(options) -> list[str]:
    with pytest.raises(OptionsError) as exc:
        job_spec_from_options(resolve_options(options))
    return exc.value.problems


def test_schema_is_a_valid_universe_config_schema():
    text = (ROOT / "config-schema.json").read_text(encoding="ascii")
    assert "\\u" not in text
    jsonschema.Draft4Validator(json.loads(META.read_text())).validate(json.loads(text))


def test_merge_objects_merged_arrays_and_scalars_replaced():
    base = {"a": {"x": 1, "y": [1, 2]}, "b": 1}
    assert deep_merge(base, {"a": {"y": [3]}, "b": 2}) == {"a": {"x": 1, "y": [3]}, "b": 2}


def test_defaults_fill_what_the_user_left_out():
    opts = resolve_options({"job": {"command": "x"}, "roles": {"worker": {"count": 2}}})
    assert opts["roles"]["worker"]["mem"] == 1024 and opts["service"]["role"] == "*"
    spec = job_spec_from_options(opts)
    assert [r.name for r in spec.roles] == ["worker"] and spec.roles[0].command == "x"


@pytest.mark.parametrize(
    "options, expected",
    [
        ({"roles": {"worker": {"count": "2"}}}, '$.roles.worker.count: "2" is invalid: expected integer'),
        ({"roles": {"gpu_worker": {}}}, "$.roles.gpu_worker: unknown field; expected one of: chief, evaluator, ps, worker"),
        ({"roles": {"worker": {"count": 1, "cpus": 0}}}, "$.roles.worker.cpus: 0 is invalid: expected a number > 0"),
        ({"roles": {"worker": {"count": 1, "gpus": 0.5}}}, "$.roles.worker.gpus: 0.5 is invalid: expected integer"),
        ({"roles": {"chief": {"count": 2}}}, "$.roles.chief.count: 2 is invalid: expected a number <= 1"),
        ({"policies": {"success": "ps"}}, '$.policies.success: "ps" is invalid: expected one of "chief", "worker0", "all_workers"'),
    ],
)
def test_schema_violations_name_path_value_and_expectation(options, expected):
    assert expected in problems(options)


def test_cross_field_problems():
    assert any("no chief and no worker" in p for p in problems({"roles": {"ps": {"count": 1}}}))
    msg = problems({"roles": {"worker": {"count": 1}}})
    assert any(p.startswith("$.roles.worker.command: empty") for p in msg)
    # The span checks first, then what TensorFlow's profile cannot train (core/tensorflow/profile.py), all at once.
    msg = problems({"roles": {"chief": {"count": 1}}, "policies": {"success": "worker0"}})
    assert [p.split(":")[0] for p in msg] == ["$.roles.chief.command", "$.policies.success"], msg
    assert msg[1] == '$.policies.success: "worker0" needs workers: expected $.roles.worker.count >= 1'


def test_file_errors_name_the_file(tmp_path):
    bad = tmp_path / "o.json"
    bad.write_text("{not json")
    with pytest.raises(OptionsError, match="o.json: not valid JSON"):
        load_options_file(bad)


@pytest.mark.parametrize("path", sorted((ROOT / "examples").glob("*/options.json")), ids=lambda p: p.parent.name)
def test_examples_are_valid(path):
    job_spec_from_options(load_options_file(path))


def test_the_docs_options_reference_is_current():
    import subprocess
    import sys

    check = subprocess.run([sys.executable, str(ROOT / "tools" / "options_reference.py"), "--check"],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout
