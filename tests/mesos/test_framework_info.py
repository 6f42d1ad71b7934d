"""What a job asks Mesos for: its role, the refined reservation format, GPUs only when it wants them."""
from __future__ import annotations

from typing import Any

from tests.core.helpers import spec_of
from tfmesos.mesos.driver import framework_info
from tfmesos.mesos.pymesos_driver import Pymesos


def _capabilities(info: dict[str, Any]) -> list[str]:
    return [c["type"] for c in info["capabilities"]]


def test_a_cpu_job_subscribes_in_its_role_without_gpu_or_revocable_capabilities():
    spec = spec_of(chief={"count": 1})
    info = framework_info(spec, None, "")
    assert info["roles"] == ["*"] and "role" not in info
    assert _capabilities(info) == ["MULTI_ROLE", "RESERVATION_REFINEMENT", "TASK_KILLING_STATE"]


def test_gpu_and_revocable_capabilities_only_when_asked():
    spec = spec_of(chief={"count": 1, "gpus": 1})
    spec = type(spec)(**{**spec.__dict__, "service": type(spec.service)(**{**spec.service.__dict__,
                                                                            "revocable": True, "mesos_role": "ml"})})
    info = framework_info(spec, None, "")
    assert info["roles"] == ["ml"]
    assert _capabilities(info) == ["MULTI_ROLE", "RESERVATION_REFINEMENT", "TASK_KILLING_STATE", "GPU_RESOURCES", "REVOCABLE_RESOURCES"]


class _PymesosLike:
    """pymesos' driver adds GPU_RESOURCES to every framework talking to Mesos >= 1.0."""

    def __init__(self, framework: dict[str, Any]) -> None:
        self._framework = framework

    @property
    def framework(self) -> dict[str, Any]:
        info = dict(self._framework)
        info["capabilities"] = [c for c in info.get("capabilities", []) if c["type"] != "GPU_RESOURCES"]
        info["capabilities"].append({"type": "GPU_RESOURCES"})
        return info


def test_the_pymesos_driver_keeps_gpu_resources_out_of_a_cpu_jobs_subscription():
    cpu = framework_info(spec_of(chief={"count": 1}), None, "")
    gpu = framework_info(spec_of(chief={"count": 1, "gpus": 1}), None, "")
    driver = Pymesos.driver_class(_PymesosLike)
    assert "GPU_RESOURCES" not in _capabilities(driver(cpu).framework)
    assert "GPU_RESOURCES" in _capabilities(driver(gpu).framework)
