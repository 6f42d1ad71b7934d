"""Errors a user can act on: one plain line each, naming what failed, where, and what to check.

``tfmesos.client.cli`` prints ``tfmesos: <message>`` for these and exits non-zero; anything else is a
bug and gets the generic one-liner (the traceback only with ``-v``).
"""
from __future__ import annotations

import re

MAX_SHOWN = 120  # characters of a user's value echoed back in a message


def cut(value: object, limit: int = MAX_SHOWN) -> str:
    """``repr``-like text of a value, cut so that a 100 MB value is never echoed back."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) > limit:
        return f"{text[:limit]}... ({len(text)} characters)"
    return text


_CREDENTIALS = re.compile(r"(?<![\w.-])([\w.~%+-]+):[^\s/@:]+@")


def redact_url(text: str) -> str:
    """``text`` with the password of any ``user:password@`` in it (a URL's, or a ZooKeeper host
    list's) replaced by ``***``: a URL is echoed back in errors and status lines."""
    return _CREDENTIALS.sub(r"\1:***@", text)


class TfmesosError(Exception):
    """A failure with a plain explanation: ``what`` failed, ``why``, and ``check`` (what to do)."""

    exit_code = 1

    def __init__(self, what: str, why: str, check: str = ""):
        self.what, self.why, self.check = what, why, check
        super().__init__(self.line())

    def line(self) -> str:
        return f"{self.what}: {self.why}" + (f"; {self.check}" if self.check else "")


class UnreachableError(TfmesosError):
    """An outside party (Mesos master, ZooKeeper, Marathon, the scheduler API) did not answer in time."""

    exit_code = 3


class MesosRefusal(TfmesosError):
    """The master refused us for good (a retry cannot fix it)."""

    exit_code = 4


class UsageError(TfmesosError):
    """A flag, file or environment variable that cannot work; exits 2 like an options error."""

    exit_code = 2


def mute_library_logs() -> None:
    """pymesos and kazoo log every failed connect as a warning or a traceback, and pymesos sets
    its own level on import (so call this after importing it): we report the outcome ourselves,
    plainly and once (``-v`` keeps them)."""
    import logging

    if logging.getLogger().getEffectiveLevel() <= logging.DEBUG:
        return
    # Called again after pymesos is imported: its import sets these levels (and kazoo's).
    for name in ("pymesos", "pymesos.process", "pymesos.scheduler", "kazoo", "kazoo.client", "kazoo.protocol.connection"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)
