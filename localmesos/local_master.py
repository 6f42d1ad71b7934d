"""The public entry point: an embedded master with N agents on its own thread."""
from __future__ import annotations

import asyncio
import bisect
import concurrent.futures
import logging
import shutil
import socket
import tempfile
import threading
from pathlib import Path
from typing import Any

from .agent.agent import Agent
from .http.auth import BasicAuthenticator
from .config import MasterConfig, QuotaConfig, Tuning
from .agent.executor_api import AgentApi
from .agent.forkserver import ForkServer
from .http.server import HttpServer, bind_socket
from .ids import IdGenerator
from .master.master import Master
from .master.master_api import MasterApi
from .master.operator_api import OperatorApi
from .agent.recovery import CheckpointWriter, load_agents, restored_total, save_agents
from .agent.sandbox import executor_base_environment
from .master.scheduler_api import SchedulerApi
from .master.state_json import master_state
from .resources import normalize_ranges

log = logging.getLogger(__name__)

_START_TIMEOUT = 120.0
_STOP_TIMEOUT = 120.0
_EPHEMERAL_TRIES = 32


class LocalMaster:
    """One Mesos master plus ``agents`` logical agents speaking the v1 HTTP APIs.

    Use as a context manager or call :meth:`start` / :meth:`stop`.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, agents: int = 2, agent_cpus: float = 4.0,
                 agent_mem: float = 8192.0, agent_disk: float = 20000.0, gpus_per_agent: int = 0,
                 ports_per_agent: int = 1000, first_port: int = 31000, work_dir: str | Path | None = None,
                 allocation_interval: float = 1.0, heartbeat_interval: float = 15.0,
                 credentials: dict[str, str] | None = None, *, agent_resources: dict[int, str] | None = None,
                 weights: dict[str, float] | None = None, quotas: dict[str, QuotaConfig] | None = None,
                 acls: dict[str, Any] | None = None, tuning: Tuning | None = None,
                 agents_recover: bool | None = None, machine_per_agent: bool = False) -> None:
        self._owns_work_dir = work_dir is None
        self._work_dir_arg = Path(work_dir).resolve() if work_dir is not None else None
        self._settings: dict[str, Any] = dict(
            host=host, port=port, agents=agents, agent_cpus=agent_cpus, agent_mem=agent_mem,
            agent_disk=agent_disk, gpus_per_agent=gpus_per_agent, ports_per_agent=ports_per_agent,
            first_port=first_port, allocation_interval=allocation_interval,
            heartbeat_interval=heartbeat_interval, credentials=dict(credentials) if credentials else None,
            agent_resources=dict(agent_resources or {}), weights=dict(weights or {}), quotas=dict(quotas or {}),
            acls=acls, tuning=tuning or Tuning(), machine_per_agent=machine_per_agent,
            # Default: recoverable where the work dir outlives this process (given, not made here).
            agents_recover=work_dir is not None if agents_recover is None else agents_recover)
        MasterConfig(work_dir=Path("."), **self._settings)  # validate arguments early
        self._config: MasterConfig | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._master: Master | None = None
        self._agents: list[Agent] = []
        self._forkserver: ForkServer | None = None
        self._servers: list[HttpServer] = []
        self._lock = threading.Lock()
        self._started = False
        self._stopped = False

    # -- public API ---------------------------------------------------------
    def start(self) -> "LocalMaster":
        """Bind every socket and start serving; returns once listening."""
        with self._lock:
            if self._started:
                return self
            self._started = True
        if self._work_dir_arg is None:
            work_dir = Path(tempfile.mkdtemp(prefix="tfmesos-localmaster-")).resolve()
        else:
            work_dir = self._work_dir_arg
            work_dir.mkdir(parents=True, exist_ok=True)
        self._config = MasterConfig(work_dir=work_dir, **self._settings)
        self._loop = asyncio.new_event_loop()
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="localmaster-io")
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run_loop, args=(ready,), name="localmaster-loop",
                                        daemon=True)
        self._thread.start()
        ready.wait()
        try:
            asyncio.run_coroutine_threadsafe(self._setup(), self._loop).result(_START_TIMEOUT)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Kill every executor/task process tree, close streams and sockets. Idempotent."""
        with self._lock:
            if self._stopped or not self._started:
                self._stopped = True
                return
            self._stopped = True
        loop = self._loop
        assert loop is not None and self._thread is not None
        try:
            asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(_STOP_TIMEOUT)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            self._thread.join(_STOP_TIMEOUT)
            loop.close()
            if self._pool is not None:
                self._pool.shutdown(wait=False, cancel_futures=True)
            if self._owns_work_dir and self._config is not None:
                shutil.rmtree(self._config.work_dir, ignore_errors=True)

    def __enter__(self) -> "LocalMaster":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def address(self) -> str:
        """``host:port`` of the master, as pymesos wants it."""
        return self._require_master().address

    @property
    def work_dir(self) -> Path:
        if self._config is None:
            raise RuntimeError("LocalMaster is not started")
        return self._config.work_dir

    def master_info(self) -> dict[str, Any]:
        """The MasterInfo a Mesos master publishes (also in ZooKeeper)."""
        master = self._require_master()
        return self._call(master.master_info)

    def state(self) -> dict[str, Any]:
        """The same document as ``GET /state``."""
        master = self._require_master()
        return self._call(lambda: master_state(master))

    def pause_agent(self, index: int) -> None:
        """Agent ``index`` stops as a SIGSTOPped mesos-agent does: it answers no ping and no
        executor, while its tasks run on; after ``agent_ping_timeout`` x ``max_agent_ping_timeouts``
        the master marks it unreachable."""
        agent = self._agents[index]
        self._call(agent.pause)

    def resume_agent(self, index: int) -> None:
        """Agent ``index`` continues (SIGCONT): it re-registers and does what it missed."""
        agent = self._agents[index]
        self._call(agent.resume)

    @property
    def agent_endpoints(self) -> dict[str, str]:
        """agent id -> ``host:port`` of that agent's HTTP API."""
        return {agent.id: agent.endpoint for agent in self._agents}

    # -- internals ----------------------------------------------------------
    def _require_master(self) -> Master:
        if self._master is None:
            raise RuntimeError("LocalMaster is not started")
        return self._master

    def _call(self, function):  # type: ignore[no-untyped-def]
        loop = self._loop
        assert loop is not None
        if threading.current_thread() is self._thread:
            return function()

        async def run():  # type: ignore[no-untyped-def]
            return function()

        return asyncio.run_coroutine_threadsafe(run(), loop).result(_START_TIMEOUT)

    def _run_loop(self, ready: threading.Event) -> None:
        loop = self._loop
        assert loop is not None
        asyncio.set_event_loop(loop)
        loop.call_soon(ready.set)
        loop.run_forever()
        # Let cancelled tasks finish their cleanup before the loop closes.
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))

    async def _setup(self) -> None:
        config = self._config
        loop = self._loop
        assert config is not None and loop is not None and self._pool is not None
        if config.effective_ports_per_agent() < config.ports_per_agent:
            log.warning("only %d ports per agent fit below 65536 for %d agents",
                        config.effective_ports_per_agent(), config.agents)
        master_socket = bind_socket(config.host, config.port)
        ids = IdGenerator()
        # Started on first use, from this (the loop's) thread: its PDEATHSIG follows this thread.
        self._forkserver = ForkServer(loop, config.tuning.fork_modules, base_env=executor_base_environment(),
                                      preload=config.tuning.fork_preload)
        master = Master(config, loop, ids)
        master.port = master_socket.getsockname()[1]
        authenticator = BasicAuthenticator(config.credentials) if config.credentials else None
        api = MasterApi(master, SchedulerApi(master, authenticator), OperatorApi(master))
        server = HttpServer(api.handle, "master")
        await server.start(master_socket)
        self._servers.append(server)
        previous = load_agents(config.work_dir)[: config.agents]
        sockets = _agent_sockets(config, master.port, [entry.get("port") for entry in previous])
        checkpoints = CheckpointWriter(loop, self._pool)
        next_gpu = 0
        for index, sock in enumerate(sockets):
            # Agents keep their ids (and ports) across restarts with the same work_dir.
            agent_id = previous[index]["id"] if index < len(previous) else ids.agent_id(index)
            agent = Agent(index=index, agent_id=agent_id, config=config, loop=loop, master=master,
                          pool=self._pool, checkpoints=checkpoints, forkserver=self._forkserver,
                          first_gpu=next_gpu)
            next_gpu += int(agent.configured.scalar("gpus"))
            restored = restored_total(previous[index], agent.configured) if index < len(previous) else None
            if restored is not None:
                agent.total = restored
            agent_server = HttpServer(AgentApi(agent, lambda: config.host).handle, f"agent-{index}")
            agent_server.gate = agent.freeze.awake
            await agent_server.start(sock)
            agent.server = agent_server
            agent.port = agent_server.port
            self._agents.append(agent)
        self._master = master
        for agent in self._agents:
            master.add_agent(agent)
            for framework_info, executor_info, tasks in agent.recover():
                master.recover_executor(agent.id, framework_info, executor_info, tasks)
        save_agents(config.work_dir, master.agent_book.entries())
        master.start()
        self._forkserver.prestart()
        log.info("local master %s listening on %s with %d agents", ids.master_id, master.address,
                 len(self._agents))

    async def _shutdown(self) -> None:
        # Stop listening first: schedulers whose stream we end must not get back in.
        for server in self._servers:
            await server.close()
        if self._master is not None:
            await self._master.stop()
        for agent in self._agents:
            if agent.server is not None:
                await agent.server.close()
        if self._forkserver is not None:
            self._forkserver.close()


def _agent_sockets(config: MasterConfig, master_port: int, preferred: list[int | None]) -> list[socket.socket]:
    """One listening socket per agent, outside every agent's offered port range.

    ``preferred`` ports (from the previous run) are tried first, so executors
    find their agent again.  The kernel's ephemeral ports may fall inside the
    offered ranges (which can cover most of 31000-65535 with many agents);
    after a few such picks we walk down from ``first_port - 1`` instead.
    """
    reserved = normalize_ranges(r for r in (config.agent_port_range(i) for i in range(config.agents)) if r)
    starts = [begin for begin, _ in reserved]

    def usable(port: int) -> bool:  # a bisection: 1,000 agents' ranges tried for every socket was 10^6 steps
        at = bisect.bisect_right(starts, port) - 1
        return port != master_port and not (at >= 0 and port <= reserved[at][1])

    sockets: list[socket.socket] = []
    rejected: list[socket.socket] = []
    explicit = iter(range(config.first_port - 1, 1023, -1))
    try:
        while len(sockets) < config.agents:
            wanted = preferred[len(sockets)] if len(sockets) < len(preferred) else None
            if wanted and usable(wanted):
                try:
                    sockets.append(bind_socket(config.agent_host(len(sockets)), wanted))
                    continue
                except OSError:
                    log.warning("agent port %d of the previous run is taken", wanted)
            if len(rejected) < _EPHEMERAL_TRIES:
                sock = bind_socket(config.agent_host(len(sockets)), 0)
                if usable(sock.getsockname()[1]):
                    sockets.append(sock)
                else:
                    rejected.append(sock)  # keep it bound so the kernel hands out another one
                continue
            port = next(explicit, None)
            if port is None:
                raise OSError("no free port outside the agents' port ranges")
            if not usable(port):
                continue
            try:
                sockets.append(bind_socket(config.agent_host(len(sockets)), port))
            except OSError:
                continue
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    finally:
        for sock in rejected:
            sock.close()
    return sockets

