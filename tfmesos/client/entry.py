# PYTHON_ARGCOMPLETE_OK (the console scripts complete with argcomplete: tfmesos --help says how)
"""The console scripts' first code (``tfmesos``, ``tfrun``; ``python -m tfmesos.client.cli`` and
``python -m tfmesos.client.tfrun`` do the same): a Ctrl-C while Python is still importing tfmesos (about a
second) exits 130 with one line instead of a KeyboardInterrupt traceback. Once the command runs,
its own handling takes over (``cli.main``, ``signals``)."""
from __future__ import annotations

import os
import signal
import sys
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


def tfmesos() -> None:
    quiet_imports()
    from .cli import main

    imported()
    sys.exit(main())


def tfrun() -> None:
    quiet_imports()
    from .tfrun import main

    imported()
    sys.exit(main())
