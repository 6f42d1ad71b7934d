"""What a session is told before it opens: where its job runs (``RunSettings``), what its
front-end does differently (``SessionKind``), and the embedded cluster's defaults. Plain data
below the session, the embedded master and the preflight checks, which all read it."""
from __future__ import annotations

from dataclasses import dataclass

from localmesos.config import MasterConfig

EMBEDDED_PORTS_PER_AGENT = 100
EMBEDDED = MasterConfig()  # the embedded agents' defaults have this one home


@dataclass
class RunSettings:
    """Where a session's job runs and how it is reached: the master, the state, the API."""
    master: str | None = None  # None: start the embedded master
    zk: str = ""
    state_dir: str = ""
    api_port: int | None = None  # None: the options' service.api_port
    api_host: str = "127.0.0.1"
    # The embedded cluster's size: its defaults are the embedded master's own.
    agents: int = EMBEDDED.agents
    agent_cpus: float = EMBEDDED.agent_cpus
    agent_mem: float = EMBEDDED.agent_mem
    agent_disk: float = EMBEDDED.agent_disk
    gpus_per_agent: int = EMBEDDED.gpus_per_agent
    quiet: bool = False
    tf_noise: bool = False  # the console shows TensorFlow's start-up messages (else folded: console.py)
    connect_timeout: float = 30.0
    keep_serving: float = 0.0  # seconds the API and the page stay up after the end (--keep-serving)
    driver: str = ""  # the Mesos driver, own or pymesos (--driver; "": TFMESOS_DRIVER, else own)


@dataclass(frozen=True)
class SessionKind:
    """What a front-end's session does differently; the defaults are ``tfmesos run``'s."""
    persist: bool | None = None  # None: persist the state unless the embedded master (gone with us) runs it
    child_master: bool = False  # the embedded master in a child process that dies with ours (cluster())
    restart: bool = True  # the API offers POST /v1/restart/TASK
    failover: bool = True  # a scheduler that dies leaves the job to the next one (not torn down)
    remote_checks: bool = True  # refuse a duplicate framework, probe role quotas (remote); probe the agents
    progress: bool = True  # training progress lines on the console
