"""Hints from what a failure looks like (pure)."""
from __future__ import annotations

import pytest

from tfmesos.core.hints import missing_program_hint, no_offer_hint


@pytest.mark.parametrize("output", [
    "Traceback (most recent call last):\n  File \"train.py\", line 1\nModuleNotFoundError: No module named 'tensorflow'",
    "sh: 1: python: not found",
    "bash: line 1: tfserver: command not found",
])
def test_a_missing_program_or_module_gets_the_python_hint(output):
    hint = missing_program_hint(output)
    assert "$TFMESOS_PYTHON" in hint and "job.python" in hint


@pytest.mark.parametrize("output", ["", "loss 0.3\nValueError: shapes (2,) and (3,) not aligned",
                                    "checkpoint not founded", "FileNotFoundError: [Errno 2] No such file"])
def test_other_failures_get_no_hint(output):
    assert missing_program_hint(output) == ""


def test_no_offer_explains_the_gpu_rule_only_to_a_cpu_job():
    assert "GPU_RESOURCES" in no_offer_hint(gpus_needed=False)
    assert "GPU" not in no_offer_hint(gpus_needed=True)
    assert no_offer_hint(True).startswith("no offer was received")
