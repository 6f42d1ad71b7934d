"""A failed task named by its exception (test_failures.py) on a real Apache Mesos: the exception
line rides in the data of the executor's terminal status update, which the real master and agent
pass on as they are."""
from __future__ import annotations

import pytest

from tests.e2e.real_mesos import RealMesos
from tests.e2e.test_failures import run_failure_says_why

pytestmark = pytest.mark.slow

AGENT = "cpus:4;mem:8192;disk:4000;ports:[31000-31999]"


def test_a_failed_python_task_is_named_by_its_exception_on_real_mesos(tmp_path):
    with RealMesos(tmp_path / "mesos", [AGENT]) as master:
        run_failure_says_why(tmp_path, master)
