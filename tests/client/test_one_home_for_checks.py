"""``tfmesos.cluster()`` and ``tfmesos run --dry-run`` go through the same three homes of option
checks (docs/developers/architecture.md): the same bad input is refused by both, with the same
message, whichever home refuses it: the document's (the schema), the job's as TensorFlow sees it
(the profile), the place's (preflight: this process' environment, the embedded agents)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import tfmesos
from tfmesos.client import cli
from tfmesos.options.load import OptionsError

SIZE = {"agents": 1, "agent_cpus": 2.0}  # the embedded cluster both are given
CASES = {
    # the document: the schema
    "document": ({"worker": {"count": 1, "cpus": -1, "command": "true"}}, {}),
    # what would never end on Mesos (preflight's option_problems)
    "restart policy": ({"worker": {"count": 1, "command": "true", "restart_policy": "Always"}}, {}),
    # the place: this process' environment, and the embedded agents' size
    "environment": ({"worker": {"count": 1, "command": "true"}}, {"MESOS_SECRET": "s3cret"}),
    "embedded agents": ({"worker": {"count": 1, "cpus": 3, "command": "true"}}, {}),
}


def _cli_problems(tmp_path: Path, roles: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> list[str]:
    """What ``tfmesos run --dry-run`` refuses, the same roles in an options file."""
    path = tmp_path / "job.json"
    path.write_text(json.dumps({"job": {"command": "true"}, "roles": {
        name: {**role, "server": "command" not in role} for name, role in roles.items()}}))
    code = cli.main(["run", str(path), "--dry-run", "--agents", str(SIZE["agents"]),
                     "--agent-cpus", str(SIZE["agent_cpus"])])
    err = capsys.readouterr().err
    assert code == 2, err
    return [line[len("  - "):] for line in err.splitlines() if line.startswith("  - ")]


def _cluster_problems(roles: dict[str, Any]) -> list[str]:
    with pytest.raises(OptionsError) as refused:
        with tfmesos.cluster(roles, **SIZE):  # the embedded agents' fit is asked as the cluster starts
            pass
    return refused.value.problems


@pytest.mark.parametrize("kind", sorted(CASES))
def test_cluster_and_a_dry_run_refuse_the_same_input_with_the_same_message(
        kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    roles, environ = CASES[kind]
    monkeypatch.delenv("MESOS_MASTER", raising=False)
    monkeypatch.delenv("MESOS_SECRET", raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    from_cli = _cli_problems(tmp_path, roles, capsys)
    from_cluster = _cluster_problems(roles)
    assert from_cli and from_cli == from_cluster, (from_cli, from_cluster)
    expected = {"document": "$.roles.worker.cpus: -1 is invalid", "restart policy": "$.roles.worker.restart_policy:",
                "environment": "MESOS_SECRET is set but $.service.principal is empty",
                "embedded agents": "$.roles.worker.cpus: 3 (plus the executor's share) does not fit"}[kind]
    assert from_cli[0].startswith(expected), from_cli
