"""Mesos scheduler events as plain data: what pymesos' callbacks carry (JSON with ``{"value": ...}``
ids, base64 framework messages) read once, here, into the terms the scheduler's shell and the
core use. ``driver.MesosAdapter`` makes these from the callbacks; the shell never sees Mesos JSON.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.placement.offers import Offer
from ..core.task_state import StatusUpdate, TaskState
from .messages import ProtocolMismatch, TaskResult, decode
from .offers import parse_offer


def value_of(ref: dict[str, Any] | None) -> str:
    """The id inside Mesos' ``{"value": ...}`` (an AgentID, OfferID, TaskID...); "" for none."""
    return (ref or {}).get("value", "")


def ref(value: str) -> dict[str, str]:
    """An id as Mesos takes it: ``{"value": ...}``."""
    return {"value": value}


@dataclass(frozen=True)
class Subscribed:
    """SUBSCRIBED: the framework's id, the master's host:port, and whether it is a re-subscription."""

    framework_id: str
    master: str
    again: bool = False


@dataclass(frozen=True)
class OffersArrived:
    """OFFERS: each parsed for the core, and the JSON kept by offer id (a LAUNCH draws its
    resources from it)."""

    offers: tuple[Offer, ...]
    raw: dict[str, dict[str, Any]]


def offers_arrived(offers: list[dict[str, Any]], revocable: bool) -> OffersArrived:
    parsed = tuple(parse_offer(raw, revocable) for raw in offers)
    return OffersArrived(parsed, {o.id: raw for o, raw in zip(parsed, offers)})


def protocol_mismatch_of(status: dict[str, Any]) -> str:
    """Why the update's data is from a tfmesos executor of another protocol ("" when it is not):
    such an executor cannot run this scheduler's tasks, and relaunching one meets the same."""
    try:
        if status.get("data"):
            decode(status["data"], f"the executor of {value_of(status['task_id'])}")
    except ProtocolMismatch as exc:
        return str(exc)
    except (ValueError, TypeError):
        pass
    return ""


_STATES = {state.value: state for state in TaskState}  # per update: a dict is ~10x faster than TaskState(value)


def parse_state(raw: str) -> TaskState:
    """A TaskStatus' state as the core's ``TaskState``; ValueError for one Mesos 1.12 does not have."""
    try:
        return _STATES[raw]
    except (KeyError, TypeError):
        raise ValueError(f"status.state: {raw!r} is no Mesos task state: expected one of "
                         f"{', '.join(s for s in _STATES if s.startswith('TASK_'))}") from None


def parse_status(status: dict[str, Any]) -> StatusUpdate:
    """UPDATE: a TaskStatus, with our executor's TaskResult (exit code, log tail) where it sent one."""
    exit_code, log_tail, exception = None, "", ""
    if status.get("data"):
        try:
            data = decode(status["data"], "the executor")
            if isinstance(data, TaskResult):
                exit_code, log_tail, exception = data.exit_code, data.log_tail, data.exception
        except (ValueError, TypeError):
            pass  # not ours (a command executor's) or another protocol: the state and message still count
    return StatusUpdate(
        task_id=value_of(status["task_id"]),
        state=parse_state(status["state"]),
        reason=status.get("reason", ""),
        message=status.get("message", ""),
        agent_id=value_of(status.get("agent_id")),
        exit_code=exit_code,
        log_tail=log_tail,
        exception=exception,
    )
