"""``tools/gpu_check.py``'s verdict over what each task reported (the run itself needs a GPU host)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("gpu_check", Path(__file__).resolve().parents[1] / "tools" / "gpu_check.py")
gpu_check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpu_check)

HOST = ["GPU-a", "GPU-b"]
GIVEN = {"chief-0": 0, "worker-0": 1, "worker-1": 1}


def report(visible: str, *uuids: str, usable: bool = True) -> dict:
    return {"visible_env": visible, "uuids": list(uuids), "usable": [usable] * len(uuids), "init": 0}


def test_each_gpu_task_on_its_own_card_and_the_cpu_task_on_none_passes() -> None:
    found = {"chief-0": report(""), "worker-0": report("0", "GPU-a"), "worker-1": report("1", "GPU-b")}
    assert gpu_check.check(found, GIVEN, HOST) == []


@pytest.mark.parametrize("found, problem", [
    ({"chief-0": report(""), "worker-0": report("0", "GPU-a"), "worker-1": report("0", "GPU-a")},
     "worker-1: shares GPU-a with worker-0"),
    ({"chief-0": report(None, "GPU-a", "GPU-b"), "worker-0": report("0", "GPU-a"), "worker-1": report("1", "GPU-b")},
     "chief-0: given 0 GPU(s), sees 2"),
    ({"chief-0": report(""), "worker-0": report("0", "GPU-a"), "worker-1": report("1")},
     "worker-1: given 1 GPU(s), sees 0"),
    ({"chief-0": report(""), "worker-0": report("0", "GPU-a", usable=False), "worker-1": report("1", "GPU-b")},
     "worker-0: a device it sees could not allocate memory"),
    ({"chief-0": report(""), "worker-0": report("0", "GPU-z"), "worker-1": report("1", "GPU-b")},
     "worker-0: sees GPU-z, which nvidia-smi does not list"),
    ({"chief-0": report(""), "worker-0": report("0", "GPU-a")}, "worker-1: wrote nothing"),
])
def test_a_shared_missing_extra_or_unusable_card_fails_with_the_task_named(found: dict, problem: str) -> None:
    problems = gpu_check.check(found, GIVEN, HOST)
    assert any(p.startswith(problem) for p in problems), problems
