"""Maintenance windows as placement sees them: plain data read from Mesos' ``unavailability`` (an
offer's, an inverse offer's; tfmesos.mesos.offers parses them), and the rules over it.

- A machine whose window is open, or opens within the job's margin
  (``policies.maintenance_margin_seconds``), gets no task: the task would be moved again at once.
- Among the others, machines with no window, or whose window opens after the job's expected end,
  come first: a move is a planned stop, cheap but not free.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from .offers import Offer


@dataclass(frozen=True)
class Window:
    """When a machine is unavailable: from ``start`` (unix seconds), for ``duration`` seconds (None:
    until further notice, as Mesos means a window without one)."""

    start: float
    duration: float | None = None

    @property
    def end(self) -> float:
        return float("inf") if self.duration is None else self.start + self.duration

    def open(self, now: float) -> bool:
        return self.start <= now < self.end

    def near(self, now: float, margin: float) -> bool:
        """Open, or opening within ``margin`` seconds: too late to start anything there."""
        return self.start - margin <= now < self.end

    def describe(self, now: float) -> str:
        """"opens in 58 s" / "open (1 h left)", for a person."""
        if now < self.start:
            return f"opens in {_seconds(self.start - now)}"
        return "open" + ("" if self.duration is None else f" ({_seconds(self.end - now)} left)")


@dataclass(frozen=True)
class InverseOffer:
    """Mesos asking the framework to give back an agent for a window (INVERSE_OFFERS)."""

    id: str
    agent_id: str
    hostname: str
    window: Window


def usable(offer: "Offer", now: float, margin: float) -> bool:
    """Whether a task may be placed on this offer's machine now (see the module)."""
    window = offer.unavailability
    return window is None or not window.near(now, margin)


def preferred(offers: Sequence["Offer"], now: float, expected_end: float | None) -> list["Offer"]:
    """``offers`` with the machines whose next window falls inside the job's expected run last
    (``expected_end`` None: unknown, every window counts), in their order otherwise."""
    def inside(offer: "Offer") -> bool:
        window = offer.unavailability
        return window is not None and (expected_end is None or window.start < expected_end)

    return sorted(offers, key=inside)  # stable: the order placement gave them otherwise


def _seconds(value: float) -> str:
    value = max(0.0, value)
    if value < 120:
        return f"{value:.0f} s"
    if value < 7200:
        return f"{value / 60:.0f} min"
    return f"{value / 3600:.1f} h"
