"""Where a job's task attempts ran, and where each agent is: what ``tfmesos logs`` (task_logs.py)
and the kept record's log locations (after_end.py) need to reach a sandbox. Learnt from the
launches and status updates (an attempt's agent) and from the offers' URLs (an agent's address);
an agent no offer named (one that ran a task before a scheduler restart) is asked of the master."""
from __future__ import annotations

import logging
from typing import Callable

from ..mesos.agent_files import agent_address_from_master

log = logging.getLogger("tfmesos.scheduler.task_places")


class TaskPlaces:
    """``master()``: the master's address now ("" while unknown)."""

    def __init__(self, master: Callable[[], str]):
        self._master = master
        self.attempt_agents: dict[str, str] = {}  # task id -> the agent it ran on
        self.agent_addresses: dict[str, str] = {}  # agent id -> host:port of its HTTP API

    def ran(self, task_id: str, agent_id: str) -> None:
        if agent_id:
            self.attempt_agents[task_id] = agent_id

    def agent_at(self, agent_id: str, address: str) -> None:
        if address:
            self.agent_addresses[agent_id] = address

    def agent_of(self, task_id: str, fallback: str = "") -> str:
        """The agent an attempt ran on; ``fallback`` for one launched before a scheduler restart
        (most likely where its task runs now)."""
        return self.attempt_agents.get(task_id) or fallback

    def agent_address(self, agent_id: str) -> str | None:
        known = self.agent_addresses.get(agent_id)
        if known:
            return known
        master = self._master()
        if not master:
            return None
        try:
            found = agent_address_from_master(master, agent_id)
        except (OSError, ValueError) as exc:
            log.info("cannot ask the master %s for agent %s: %s", master, agent_id, exc)
            return None
        if found:
            self.agent_addresses[agent_id] = found
        return found
