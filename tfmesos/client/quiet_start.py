"""A Ctrl-C while Python is still importing tfmesos (about a second) exits 130 with one line
instead of a KeyboardInterrupt traceback: ``quiet_imports()`` first, ``imported()`` once the
command's modules are in. What the console scripts (``entry``) and ``python -m`` of ``cli`` and
``tfrun`` all do, below them so that none imports another for it."""
from __future__ import annotations

import os
import signal
from typing import Any

_previous: Any = None


def _interrupted(signum: int, frame: Any) -> None:
    os.write(2, b"interrupted\n")
    raise SystemExit(128 + signum)


def quiet_imports() -> None:
    """Until ``imported()``, Ctrl-C exits quietly (an ignored SIGINT stays ignored)."""
    global _previous
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        _previous = signal.signal(signal.SIGINT, _interrupted)


def imported() -> None:
    global _previous
    if _previous is not None:
        signal.signal(signal.SIGINT, _previous)
        _previous = None
