"""Option errors a person can act on (issue 32): YAML written in a .json file says so, a pattern is
said in words (not as its regex), and a placeholder typo is reported where it was written."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tfmesos.options.load import OptionsError, PATTERN_WORDS, load_options_file, resolve_options
from tfmesos.options.jobspec import job_spec_from_options
from tfmesos.scheduler.preflight import option_problems

ROOT = Path(__file__).resolve().parents[2]


def _problems(options: dict) -> list[str]:
    with pytest.raises(OptionsError) as caught:
        resolve_options(options)
    return caught.value.problems


def test_yaml_in_a_json_file_gets_a_hint(tmp_path):
    path = tmp_path / "job.json"
    path.write_text("service:\n  name: digits\njob:\n  command: python train.py\n")
    with pytest.raises(OptionsError, match=r"job\.json: not valid JSON: .*; it reads as YAML: name it job\.yaml"):
        load_options_file(path)
    path.write_text('{"service": {"name": "digits"},}')  # JSON with a mistake: no YAML hint
    with pytest.raises(OptionsError) as caught:
        load_options_file(path)
    assert "YAML" not in str(caught.value)


def test_a_service_name_error_is_said_in_words():
    (problem,) = _problems({"service": {"name": "My_Job"}, "roles": {"worker": {"count": 1}}})
    assert problem.startswith('$.service.name: "My_Job" is invalid: expected lowercase letters, digits and')
    assert "^[a-z" not in problem


def test_every_pattern_of_the_schema_is_said_in_words():
    schema = json.loads((ROOT / "config-schema.json").read_text())
    found: set[str] = set()

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("pattern"), str):
                found.add(node["pattern"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    assert found and found <= set(PATTERN_WORDS), found - set(PATTERN_WORDS)


def test_a_placeholder_typo_is_reported_where_it_was_written():
    options = resolve_options({"service": {"name": "t"}, "job": {"command": "python t.py --hosts {worker_host}"},
                               "roles": {"worker": {"count": 2}, "chief": {"count": 1, "command": "run {chief_host}"}}})
    problems = option_problems(job_spec_from_options(options), options)
    assert sorted(p.split(": placeholder ")[0] for p in problems) == ["$.job.command", "$.roles.chief.command"], problems
    assert any(p.startswith("$.job.command: placeholder {worker_host} does not exist") for p in problems), problems
