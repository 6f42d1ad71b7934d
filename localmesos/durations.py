"""stout ``Duration`` text, as Mesos puts it in env vars and /state flags."""
from __future__ import annotations

_UNITS = (
    ("weeks", 7 * 24 * 3600.0),
    ("days", 24 * 3600.0),
    ("hrs", 3600.0),
    ("mins", 60.0),
    ("secs", 1.0),
    ("ms", 1e-3),
    ("us", 1e-6),
    ("ns", 1e-9),
)


def format_duration(seconds: float) -> str:
    """E.g. 5 -> '5secs', 60 -> '1mins', 900 -> '15mins', 0.1 -> '100ms'."""
    if seconds == 0:
        return "0ns"
    magnitude = abs(seconds)
    for name, size in _UNITS:
        if magnitude >= size:
            return f"{format(seconds / size, 'g')}{name}"
    return f"{format(seconds / 1e-9, 'g')}ns"


def from_nanoseconds(value: int | float) -> float:
    return float(value) / 1e9
