"""How options are refused: ``OptionsError``, one line per problem, each naming the option by
its JSON path (``json_path``). Below every module of options (reading a file, the schema, the
JobSpec) so that each refuses the same way without importing the others."""
from __future__ import annotations

from typing import Any, Iterable

MAX_PROBLEMS_SHOWN = 20


class OptionsError(ValueError):
    """Invalid options; ``problems`` holds one human-readable line per violation."""

    def __init__(self, problems: Iterable[str]):
        self.problems = list(problems)
        shown = self.problems[:MAX_PROBLEMS_SHOWN]
        more = len(self.problems) - len(shown)
        super().__init__("invalid options:\n" + "\n".join(f"  - {p}" for p in shown)
                         + (f"\n  ... and {more} more" if more > 0 else ""))


def json_path(parts: Iterable[Any]) -> str:
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out
