"""Training progress over time: the (time, step, loss) points the status page draws.

The chief reports every few steps for hours, so the series is bounded: once it holds
``MAX_POINTS`` it keeps every other point and from then on takes one report in two (then one in
four, ...), so the kept points stay evenly spread over the whole run. The newest report is always
kept as well, so a finished job's chart ends at its last step. Steps per second are not stored:
between two kept points they are (step difference) / (time difference), which is the true mean
rate over that stretch however many reports were dropped in between.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

MAX_POINTS = 240  # about one point per 2-3 px of the page's chart

Point = tuple[float, float, "float | None"]  # (seconds since the epoch, step, loss or None)


@dataclass
class ProgressSeries:
    OWNER: ClassVar[str] = "state.series"  # its methods alone write its fields (tests/test_state_owners.py)

    points: list[Point] = field(default_factory=list)
    stride: int = 1  # keep one report in ``stride``
    seen: int = 0  # reports offered since the stride last changed
    last: Point | None = None  # the newest report, kept or not

    def add(self, at: float, values: dict[str, Any]) -> bool:
        """Take a report's values (tfmesos.report); False when it has no numeric step."""
        step, loss = values.get("step"), values.get("loss")
        if not _number(step):
            return False
        point: Point = (float(at), float(step), float(loss) if _number(loss) else None)
        self.last = point
        if self.seen % self.stride == 0:
            self.points.append(point)
            if len(self.points) > MAX_POINTS:
                self.points = self.points[::2]
                self.stride *= 2
                self.seen = 0
        self.seen += 1
        return True

    def to_list(self) -> list[list[Any]]:
        """The kept points and the newest one, as JSON lists ``[at, step, loss]``."""
        out = [list(p) for p in self.points]
        if self.last is not None and (not self.points or self.points[-1] != self.last):
            out.append(list(self.last))
        return out

    @classmethod
    def from_list(cls, raw: Any) -> "ProgressSeries":
        """A series as ``to_list`` wrote it (a record's); anything malformed is left out."""
        series = cls()
        for item in raw if isinstance(raw, list) else []:
            if isinstance(item, list) and len(item) == 3 and _number(item[0]) and _number(item[1]):
                series.add(item[0], {"step": item[1], "loss": item[2]})
        return series


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value and abs(value) != float("inf")
