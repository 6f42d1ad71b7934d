# PYTHON_ARGCOMPLETE_OK (the console scripts complete with argcomplete: tfmesos --help says how)
"""The console scripts' first code (``tfmesos``, ``tfrun``; ``python -m tfmesos.client.cli`` and
``python -m tfmesos.client.tfrun`` do the same): a Ctrl-C while Python is still importing tfmesos
exits quietly (``quiet_start``). Once the command runs, its own handling takes over (``cli.main``,
``signals``)."""
from __future__ import annotations

import sys

from .quiet_start import imported, quiet_imports


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
