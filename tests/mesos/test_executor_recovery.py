"""The executor's reading of the recovery settings the agent gives it (MESOS_* durations)."""
from __future__ import annotations

import pytest

from tfmesos.executor import executor
from tfmesos.mesos.executor_driver import RecoveringExecutorDriver

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("text, seconds", [
    ("2mins", 120.0), ("15mins", 900.0), ("2secs", 2.0), ("1.5hrs", 5400.0), ("100ms", 0.1),
    ("250us", 250e-6), ("7ns", 7e-9), ("1days", 86400.0), ("2weeks", 1209600.0), (" 3secs ", 3.0), ("1e2ms", 0.1),
])
def test_stout_durations_are_read_in_their_own_unit(text, seconds):
    assert executor.parse_duration(text, -1.0) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "2", "mins", "2minutes", "2 s", "-1secs", "two secs", "2secsx"])
def test_anything_else_is_the_default(text):
    assert executor.parse_duration(text, 42.0) == 42.0


def test_the_driver_takes_the_agents_backoff_and_recovery_timeout(monkeypatch):
    for name, value in {"MESOS_AGENT_ENDPOINT": "127.0.0.1:1", "MESOS_FRAMEWORK_ID": "F", "MESOS_EXECUTOR_ID": "E",
                        "MESOS_CHECKPOINT": "1"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("MESOS_SUBSCRIPTION_BACKOFF_MAX", raising=False)
    monkeypatch.delenv("MESOS_RECOVERY_TIMEOUT", raising=False)
    defaults = RecoveringExecutorDriver(object())
    assert (defaults.backoff_max, defaults.recovery_timeout) == (2.0, 900.0)
    monkeypatch.setenv("MESOS_SUBSCRIPTION_BACKOFF_MAX", "500ms")
    monkeypatch.setenv("MESOS_RECOVERY_TIMEOUT", "2mins")
    driver = RecoveringExecutorDriver(object())
    assert (driver.backoff_max, driver.recovery_timeout) == (0.5, 120.0)
