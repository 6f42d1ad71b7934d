"""Settings of an embedded master and its logical agents."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

MAX_PORT = 65535


@dataclass(frozen=True)
class QuotaConfig:
    """Mesos QuotaConfig: scalar guarantees (offered first) and limits (never exceeded)."""

    guarantees: dict[str, float] = field(default_factory=dict)
    limits: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Tuning:
    """Timeouts that real Mesos hard-codes or takes from flags.

    The defaults are Mesos' own; tests shorten them to stay fast.
    """

    status_update_retry_min: float = 10.0  # STATUS_UPDATE_RETRY_INTERVAL_MIN
    status_update_retry_max: float = 600.0  # STATUS_UPDATE_RETRY_INTERVAL_MAX
    executor_registration_timeout: float = 60.0  # --executor_registration_timeout
    executor_shutdown_grace_period: float = 5.0  # --executor_shutdown_grace_period
    # --executor_reregistration_timeout: an executor that follows the v1 recovery rules (retrying
    # within MESOS_SUBSCRIPTION_BACKOFF_MAX, 2 s) is back in time; plain pymesos' (2-15 s) may not be.
    executor_reregistration_timeout: float = 2.0
    kill_grace_period: float = 3.0  # command executor default KillPolicy
    # --agent_ping_timeout / --max_agent_ping_timeouts: an agent that misses this many pings in a
    # row is marked unreachable (its tasks TASK_LOST to frameworks that are not PARTITION_AWARE).
    agent_ping_timeout: float = 15.0
    max_agent_ping_timeouts: int = 5
    stop_grace_period: float = 3.0  # LocalMaster.stop(): SIGTERM, then SIGKILL
    # Executors run as `PYTHON -m MODULE` for these modules are forked from a warm interpreter
    # (forkserver.py) instead of exec'd: ~2 ms instead of ~90 ms of CPU each. () execs them all.
    fork_modules: tuple[str, ...] = ("tfmesos.executor",)
    # What they import lazily, imported once too (encodings.idna: a socket connecting by host name).
    fork_preload: tuple[str, ...] = ("tfmesos.executor.preload", "encodings.idna")
    # What is kept of ended frameworks, as Mesos bounds it (master --max_completed_frameworks and
    # --max_completed_tasks_per_framework, 50 and 1000 by default); each agent keeps as many ended
    # frameworks, and removes the sandboxes of one it no longer lists.
    max_completed_frameworks: int = 50
    max_completed_tasks_per_framework: int = 1000
    # Agent --gc_delay: an ended framework's sandboxes are removed this long after it ended (Mesos:
    # 1 week), or as soon as the agent no longer lists it among its kept ended frameworks.
    gc_delay: float = 7 * 24 * 3600.0


@dataclass(frozen=True)
class MasterConfig:
    host: str = "127.0.0.1"
    port: int = 5050
    agents: int = 2
    agent_cpus: float = 4.0
    agent_mem: float = 8192.0
    agent_disk: float = 20000.0
    gpus_per_agent: int = 0
    ports_per_agent: int = 1000
    first_port: int = 31000
    work_dir: Path = Path(".")
    allocation_interval: float = 1.0
    heartbeat_interval: float = 15.0
    credentials: dict[str, str] | None = None
    # Multi-team settings (Mesos flags): agent index -> its --resources text (static
    # reservations); --weights; quota per role; --acls as parsed JSON.
    agent_resources: dict[int, str] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)
    quotas: dict[str, "QuotaConfig"] = field(default_factory=dict)
    acls: dict | None = None
    tuning: Tuning = field(default_factory=Tuning)
    # Whether a master restarted on this work dir can recover the agents' executors. Not when the
    # work dir goes with this process (LocalMaster made it): executors then end with the process
    # (AGENT_PROCESS_ENV) instead of waiting MESOS_RECOVERY_TIMEOUT for an agent that cannot come back.
    agents_recover: bool = True
    # Each agent on its own loopback address (127.0.0.2, .3, ...: on Linux all of 127/8 is the
    # loopback), so that each is a machine of its own for maintenance, as real agents started with
    # distinct --ip are. Otherwise they all share ``host``, one machine.
    machine_per_agent: bool = False

    def __post_init__(self) -> None:
        if self.agents < 0:
            raise ValueError("agents must be >= 0")
        if self.gpus_per_agent < 0:
            raise ValueError("gpus_per_agent must be >= 0")
        if min(self.agent_cpus, self.agent_mem, self.agent_disk) < 0:
            raise ValueError("agent resources must be >= 0")
        if self.allocation_interval <= 0 or self.heartbeat_interval <= 0:
            raise ValueError("intervals must be > 0")
        if not 1 <= self.first_port <= MAX_PORT:
            raise ValueError("first_port must be a TCP port")
        for index in self.agent_resources:
            if not 0 <= index < self.agents:
                raise ValueError(f"agent_resources: agent {index} does not exist (agents 0..{self.agents - 1})")
        for role, weight in self.weights.items():
            if not weight > 0:
                raise ValueError(f"weights: the weight of role '{role}' must be > 0, not {weight}")
        if self.machine_per_agent and (self.host != "127.0.0.1" or self.agents > 253):
            raise ValueError("machine_per_agent: needs host 127.0.0.1 and at most 253 agents "
                             f"(their addresses are 127.0.0.2 on), not host {self.host} with {self.agents}")

    def agent_host(self, index: int) -> str:
        """The address agent ``index`` listens on and names itself by."""
        return f"127.0.0.{index + 2}" if self.machine_per_agent else self.host

    def effective_ports_per_agent(self) -> int:
        """All agents share 127.0.0.1, so each gets a disjoint slice below 65536."""
        if self.ports_per_agent <= 0 or self.agents == 0:
            return max(self.ports_per_agent, 0)
        fitting = (MAX_PORT + 1 - self.first_port) // self.agents
        if fitting < 1:
            raise ValueError(f"{self.agents} agents do not fit a port range starting at {self.first_port}")
        return min(fitting, self.ports_per_agent)

    def agent_port_range(self, index: int) -> tuple[int, int] | None:
        per_agent = self.effective_ports_per_agent()
        if per_agent <= 0:
            return None
        begin = self.first_port + index * per_agent
        return begin, begin + per_agent - 1
