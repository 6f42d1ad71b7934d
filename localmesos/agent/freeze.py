"""An agent stopped as ``kill -STOP`` stops a mesos-agent: the twin of a partitioned agent.

A stopped mesos-agent answers nothing: no pings from the master, no executor calls (their
connections are accepted by the kernel and wait), no master messages, and it notices nothing of
its containers (an executor that exits is reaped later); its executors and tasks run on, in
processes of their own. When it continues, it does all it missed in order, after re-registering.
``Freeze`` is that for an in-process agent: work that would run while frozen is held, in order,
and the agent's HTTP server waits on :attr:`awake` before it handles a request.
"""
from __future__ import annotations

import asyncio
import functools
from typing import Any, Callable


class Freeze:
    def __init__(self) -> None:
        self.awake = asyncio.Event()
        self.awake.set()
        self._held: list[Callable[[], Any]] = []

    @property
    def frozen(self) -> bool:
        return not self.awake.is_set()

    def stop(self) -> None:
        self.awake.clear()

    def hold(self, function: Callable[..., Any], *args: Any) -> bool:
        """Keep ``function(*args)`` for :meth:`thaw` if frozen (True); False: run it now."""
        if self.awake.is_set():
            return False
        self._held.append(functools.partial(function, *args))
        return True

    def thaw(self, loop: asyncio.AbstractEventLoop) -> None:
        """Run what was held (in order, after what the caller posted first) and let requests in."""
        held, self._held = self._held, []
        for work in held:
            loop.call_soon(work)
        self.awake.set()

    def drop(self) -> None:
        """The agent is being stopped for good: what it missed no longer matters."""
        self._held.clear()
        self.awake.set()
