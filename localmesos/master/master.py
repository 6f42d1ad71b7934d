"""The master: its parts put together, its lifecycle, and what its agents tell it.

Everything here runs on the single event loop thread, so there is no locking; messages to agents
are posted with ``call_soon`` (``cluster.post``) to keep the asynchronous ordering of real Mesos
(master -> agent -> master).

The parts, each over the shared ``Cluster`` records: ``agents`` (registration, health, removal,
the operator's agent calls), ``subscriptions`` (SUBSCRIBE, failover, removal), ``scheduler_calls``
(the calls of a subscribed framework), ``tasks`` (task and executor bookkeeping, status updates),
``offers`` (made from the allocator's grants), ``inverse_offers``, ``draining`` (drain, deactivate,
reactivate), ``maintenance`` (the schedule, machines down and up) and the ``allocator``, which
reads the records through its ``AllocatorView``, hands its decisions to ``OfferBook.make`` and
has ``InverseOfferBook.send`` run after each round.
"""
from __future__ import annotations

import asyncio
import socket
import struct
import time
from typing import Any

from ..agent.agent import Agent
from ..config import MasterConfig
from ..http.auth import Acls
from ..ids import IdGenerator
from .agents import AgentBook
from .allocator import Allocator
from .cluster import AgentRecord, Cluster
from .draining import Drains
from .inverse_offers import InverseOfferBook
from .maintenance import Maintenance
from .offers import OfferBook
from .scheduler_calls import SchedulerCalls
from .status_updates import StatusUpdate
from .subscriptions import Subscriptions
from .tasks import TaskBook

VERSION = "1.12.0"
MASTER_CAPABILITIES = ("AGENT_UPDATE", "AGENT_DRAINING", "QUOTA_V2")


class Master:
    def __init__(self, config: MasterConfig, loop: asyncio.AbstractEventLoop, ids: IdGenerator) -> None:
        self.config = config
        self.loop = loop
        self.ids = ids
        self.port = config.port
        self.start_time = time.time()
        self.acls = Acls.from_json(config.acls) if config.acls is not None else None
        self.cluster = cluster = Cluster.for_config(config)
        self.offer_book = offers = OfferBook(cluster, ids)
        self.inverse_offers = inverse = InverseOfferBook(cluster, ids)
        self.allocator = Allocator(cluster, offers.make, loop, config.allocation_interval, after_round=inverse.send)
        self.task_book = TaskBook(cluster, left_agent=self._left_agent)
        self.subscriptions = Subscriptions(cluster, config, loop, ids, self.acls, offers, inverse, self.task_book,
                                           self.allocator, self.master_info)
        self.scheduler_calls = SchedulerCalls(cluster, config, loop, self.acls, offers, inverse, self.task_book,
                                              self.subscriptions, self.allocator)
        self.agent_book = AgentBook(cluster, config, loop, offers, inverse, self.task_book, self.subscriptions,
                                    self.allocator, readmitted=self._readmitted)
        self.maintenance = Maintenance(cluster, offers, inverse, self.allocator.trigger, self.agent_book.take_down)
        self.drains = Drains(cluster, loop, offers, inverse, self.maintenance.scheduled_machine,
                             self.agent_book.mark_gone)

    # -- lifecycle ----------------------------------------------------------
    def add_agent(self, agent: Agent) -> None:
        self.agent_book.add(agent)

    def recover_executor(self, agent_id: str, framework_info: dict[str, Any], executor_info: dict[str, Any],
                         tasks: list[tuple[dict[str, Any], str]]) -> None:
        self.agent_book.recover_executor(agent_id, framework_info, executor_info, tasks)

    def start(self) -> None:
        self.allocator.start()
        self.agent_book.start_pings()

    async def stop(self) -> None:
        self.allocator.stop()
        self.subscriptions.close()
        await self.agent_book.stop()

    @property
    def address(self) -> str:
        return f"{self.config.host}:{self.port}"

    def master_info(self) -> dict[str, Any]:
        host = self.config.host
        packed = struct.unpack("<I", socket.inet_aton(host))[0]
        return {
            "id": self.ids.master_id,
            "ip": packed,
            "port": self.port,
            "pid": f"master@{self.address}",
            "hostname": host,
            "version": VERSION,
            "address": {"hostname": host, "ip": host, "port": self.port},
            "capabilities": [{"type": c} for c in MASTER_CAPABILITIES],
        }

    # -- what the agents tell the master (the agent's ``MasterLink``) ----------
    def status_update(self, agent_id: str, update: StatusUpdate, latest_state: str) -> None:
        self.task_book.status_update(agent_id, update, latest_state)

    def executor_message(self, agent_id: str, framework_id: str, executor_id: str, data: str) -> None:
        self.task_book.executor_message(agent_id, framework_id, executor_id, data)

    def exited_executor(self, agent_id: str, framework_id: str, executor_id: str, status: int) -> None:
        self.task_book.exited_executor(agent_id, framework_id, executor_id, status)

    def reregister_agent(self, agent: Agent) -> None:
        self.agent_book.reregister(agent)

    # -- between the parts ----------------------------------------------------
    def _left_agent(self, record: AgentRecord) -> None:
        self.drains.check_drained(record)

    def _readmitted(self, record: AgentRecord) -> None:
        self.maintenance.add_agent(record)
        self.drains.reregistered(record)
