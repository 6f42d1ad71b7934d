"""Identifier formats of a Mesos master (``<master id>-0000``, ``-S0``, ``-O0``)."""
from __future__ import annotations

import itertools
import uuid


class IdGenerator:
    def __init__(self, master_id: str | None = None) -> None:
        self.master_id = master_id or str(uuid.uuid4())
        self._frameworks = itertools.count()
        self._offers = itertools.count()

    def framework_id(self) -> str:
        return f"{self.master_id}-{next(self._frameworks):04d}"

    def offer_id(self) -> str:
        return f"{self.master_id}-O{next(self._offers)}"

    def agent_id(self, index: int) -> str:
        return f"{self.master_id}-S{index}"

    @staticmethod
    def stream_id() -> str:
        return str(uuid.uuid4())

    @staticmethod
    def container_id() -> str:
        return str(uuid.uuid4())

    @staticmethod
    def status_uuid() -> bytes:
        return uuid.uuid4().bytes
