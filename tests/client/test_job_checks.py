"""Every home of option checks in one round (client/job_checks.py): what the schema refuses comes
with what the checks that span fields, the framework's profile and preflight find in the rest of
the document, and nothing is said about a part the schema refused (it was judged on its default)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tfmesos.client import cli
from tfmesos.client.job_checks import check_job
from tfmesos.options.load import OptionsError

PLACE = {"environ": {}, "embedded": False, "create": False}


def _problems(document: dict) -> list[str]:
    with pytest.raises(OptionsError) as refused:
        check_job(document, **PLACE)
    return refused.value.problems


def test_a_schema_error_and_a_placeholder_elsewhere_come_together() -> None:
    problems = _problems({"roles": {"ps": {"count": 1, "cpus": -1},
                                    "worker": {"count": 1, "command": "python t.py --ps {ps_host}"}}})
    assert problems[0].startswith("$.roles.ps.cpus: -1 is invalid")
    assert problems[1].startswith("$.roles.worker.command: placeholder {ps_host} does not exist")
    assert len(problems) == 2


def test_a_schema_error_and_a_check_across_fields_come_together() -> None:
    problems = _problems({"job": {"command": "python t.py", "env": ["NOT AN ENTRY"]},
                          "roles": {"ps": {"count": 1, "server": True, "command": "python serve.py"},
                                    "worker": {"count": 1}}})
    assert problems[0].startswith("$.job.env[0]:")
    assert problems[1].startswith('$.roles.ps.command: \'python serve.py\' is given with "server": true')
    assert len(problems) == 2


def test_an_unknown_field_and_the_profiles_refusal_come_together() -> None:
    problems = _problems({"job": {"comand": "python t.py"}, "roles": {"worker": {"count": 0}}})
    assert problems[0].startswith("$.job.comand: unknown field")
    assert any(p.startswith("$.roles: no chief and no worker") for p in problems[1:]), problems


def test_nothing_is_said_of_a_part_judged_on_its_default() -> None:
    # worker.count is refused; on its default (0) the profile would say "no chief and no worker",
    # which is about the repaired part ($.roles holds it), not about the user's document.
    problems = _problems({"job": {"command": "python t.py"}, "roles": {"worker": {"count": "two"}}})
    assert len(problems) == 1 and problems[0].startswith("$.roles.worker.count: \"two\" is invalid"), problems


def test_a_valid_document_gives_the_job_and_the_warnings() -> None:
    job = check_job({"job": {"command": "python t.py"}, "roles": {"worker": {"count": 2}}}, **PLACE)
    assert [str(k) for k in job.spec.task_keys()] == ["worker:0", "worker:1"]
    assert job.options["roles"]["worker"]["count"] == 2


def test_tfmesos_run_says_every_problem_in_one_round(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "job.yaml"
    path.write_text("job:\n  command: python t.py {worker_host}\nroles:\n  worker:\n    count: 1\n    mem: -5\n")
    assert cli.main(["run", str(path), "--dry-run"]) == 2
    said = [line[len("  - "):] for line in capsys.readouterr().err.splitlines() if line.startswith("  - ")]
    assert said[0].startswith("$.roles.worker.mem: -5 is invalid") and said[0].endswith("(job.yaml line 6)"), said
    assert said[1].startswith("$.job.command: placeholder {worker_host} does not exist"), said
    assert said[1].endswith("(job.yaml line 2)"), said
    assert len(said) == 2, said
