"""Secrets on a real Apache Mesos 1.12 (POSIX launcher and isolation, Mesos' default secret
resolver; see real_mesos.py): the probe of test_secrets.py, and what the agent does with a secret
store's name, which only a resolver module (DC/OS') can resolve."""
from __future__ import annotations

import pytest

from tests.e2e.harness import run_scheduler, stop_scheduler, write_options
from tests.e2e.real_mesos import RealMesos
from tests.e2e.secret_probe import run_and_probe
from tests.localmesos.agent import test_secrets as embedded

pytestmark = pytest.mark.slow

AGENT = "cpus:2;mem:4096;disk:4000;ports:[31000-31999]"


def test_secrets_reach_the_task_and_appear_nowhere_else_on_real_mesos(tmp_path) -> None:
    with RealMesos(tmp_path / "mesos", [AGENT]) as master:
        found = run_and_probe(tmp_path, master.address, [master.sandboxes()], [tmp_path / "mesos" / "logs"],
                              "secrets-real")
    assert found == {}


@pytest.mark.parametrize("field, item, said", [
    ("secret_env", "TEAM_TOKEN=team-a/token",
     "Failed to launch container: Collect failed: Default secret resolver cannot resolve references"),
    ("secret_files", "keys/token=team-a/token", "Failed to launch container: Volumes in ContainerInfo is not supported"),
])
def test_a_secret_store_name_reaches_the_agent_as_a_reference(tmp_path, field: str, item: str, said: str) -> None:
    """Without a resolver module the agent fails the launch, saying why; the job fails at once."""
    opts = write_options(tmp_path / "o.json", service={"name": "secrets-ref"},
                         job={"command": "true", field: [item]}, roles={"chief": {"count": 1, "cpus": 0.1, "mem": 64}})
    with RealMesos(tmp_path / "mesos", [AGENT]) as master:
        run = run_scheduler(opts, "--master", master.address, "--state-dir", str(tmp_path / "state"))
        try:
            assert run.wait(120) != 0, run.output[-3000:]
        finally:
            stop_scheduler(run)
    assert said in run.output, run.output[-3000:]
    assert "job secrets-ref FAILED" in run.output, run.output[-3000:]


@pytest.mark.parametrize("check", [embedded.test_invalid_secrets_are_refused_with_mesos_messages,
                                   embedded.test_a_secret_that_is_not_base64_refuses_the_call_as_protobuf_parsing_does],
                         ids=["validation", "base64"])
def test_the_embedded_masters_secret_checks_hold_on_the_real_master(tmp_path, check) -> None:
    """The embedded master's tests of invalid secrets, run against the real master: same answers."""
    with RealMesos(tmp_path / "mesos", [AGENT]) as master:
        check(lambda: master)
