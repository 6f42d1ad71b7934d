"""A stop's notice reaches the executor before the KILL sent after it: the adapter sends it on the
calls' own connection (in order with KILL), while the ClusterSpec's answers go pipelined on a sender
of their own (tfmesos' driver). Sent pipelined, the notice came after the KILL: the executor took
the scheduler's plain stop at a job's end for a drain (SIGKILL in 30 s, not 3)."""
from __future__ import annotations

from typing import Any

from tfmesos.mesos.driver import MesosAdapter


class _Calls:
    """The driver's surface the adapter uses to send, as tfmesos' own driver has it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def sendFrameworkMessage(self, executor_id: dict, agent_id: dict, data: str) -> None:  # noqa: N802
        self.calls.append(("now", data))

    def send_message_pipelined(self, executor_id: dict, agent_id: dict, data: str) -> None:
        self.calls.append(("pipelined", data))

    def killTask(self, task_id: dict, agent_id: dict | None = None) -> None:  # noqa: N802
        self.calls.append(("kill", task_id["value"]))


def test_an_ordered_message_goes_out_now_before_the_kill_and_others_pipelined():
    adapter = MesosAdapter(shell=None)  # type: ignore[arg-type]
    adapter.driver = _Calls()
    adapter.send("t1", "a1", "clusterspec")
    adapter.send("t1", "a1", "notice", ordered=True)
    adapter.kill("t1")
    assert adapter.driver.calls == [("pipelined", "clusterspec"), ("now", "notice"), ("kill", "t1")]
