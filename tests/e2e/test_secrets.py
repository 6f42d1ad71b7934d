"""A job's secrets reach its task and nothing else, on the embedded master (a `tfmesos local-master`
of the test's own, whose /state and operator API the probe reads while the task runs)."""
from __future__ import annotations

from tests.e2e.harness import LocalMaster
from tests.e2e.secret_probe import run_and_probe


def test_secrets_reach_the_task_and_appear_nowhere_else(tmp_path) -> None:
    master = LocalMaster(tmp_path / "master", agents=1)
    try:
        found = run_and_probe(tmp_path, master.address, [tmp_path / "master"], [], "secrets-e2e",
                              master_output=lambda: master.output)
    finally:
        master.stop()
    assert found == {}
