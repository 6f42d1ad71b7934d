"""One logical Mesos agent: its frameworks, containers and tasks, and their status updates.

Every agent owns its own listening socket (``MESOS_AGENT_ENDPOINT``) on the
shared event loop.  The master talks to it through plain method calls that
the master posts with ``loop.call_soon`` (standing in for libprocess
messages); the agent answers through the :class:`MasterLink` protocol.

The agent keeps the bookkeeping: which framework runs which executor with
which tasks, GPUs, launching and destroying containers (sandbox, fetch, spawn,
kill, exit), the agent's own status updates (``accept_status``, handed to
``status_updates``), and the registration timers.  Elsewhere: the executors'
side of the v1 executor API in ``executor_sessions`` (owned here as
``sessions``), what a container's checkpoint holds and what a restart does
with it in ``recovery``, the records themselves in ``containers``.
"""
from __future__ import annotations

import asyncio
import functools
import shutil
import logging
import signal
import time
from collections import deque
from concurrent.futures import Executor as ThreadPool
from pathlib import Path
from typing import Any, Callable, Protocol

from .command_executor import CommandRunner
from ..config import MasterConfig
from .containers import AgentFramework, AgentTask, Executor, ExecutorState, Termination
from ..durations import format_duration, from_nanoseconds
from .executor_sessions import ExecutorSessions
from .fetcher import FetchError, fetch_all
from .forkserver import ForkServer
from .freeze import Freeze
from ..http.server import HttpServer
from ..ids import IdGenerator
from .procs import ManagedProcess, spawn, wait_status
from .recovery import CheckpointWriter, record_container, recover_containers, reregistration_termination
from ..http.protojson import b64decode, b64encode
from ..resources import Resources, parse_resources_text
from .sandbox import AGENT_PROCESS_ENV, command_argv, create_sandbox, executor_environment, own_process, sandbox_path
from .secrets import write_secret_volumes
from ..master.status_updates import StatusUpdate, StatusUpdateManager

log = logging.getLogger(__name__)

_STATUS_KEY_ORDER = ("task_id", "state", "message", "source", "reason", "agent_id", "executor_id",
                     "timestamp", "uuid", "container_status")


class MasterLink(Protocol):
    """What an agent tells the master (libprocess messages in real Mesos)."""

    def status_update(self, agent_id: str, update: StatusUpdate, latest_state: str) -> None: ...

    def executor_message(self, agent_id: str, framework_id: str, executor_id: str, data: str) -> None: ...

    def exited_executor(self, agent_id: str, framework_id: str, executor_id: str, status: int) -> None: ...

    def reregister_agent(self, agent: "Agent") -> None: ...


def order_status(status: dict[str, Any]) -> dict[str, Any]:
    """Key order of the traces (cosmetic; JSON consumers do not care)."""
    ordered = {k: status[k] for k in _STATUS_KEY_ORDER if k in status}
    ordered.update({k: v for k, v in status.items() if k not in ordered})
    return ordered


class Agent:
    def __init__(self, *, index: int, agent_id: str, config: MasterConfig, loop: asyncio.AbstractEventLoop,
                 master: MasterLink, pool: ThreadPool, checkpoints: CheckpointWriter,
                 forkserver: ForkServer | None = None, first_gpu: int = 0) -> None:
        self.index = index
        self.id = agent_id
        self.hostname = config.agent_host(index)
        self.port = 0
        self._config = config
        self._own_process = "" if config.agents_recover else own_process()
        self.tuning = config.tuning
        self.work_dir = config.work_dir
        self._loop = loop
        self._master = master
        self._pool = pool
        self._forkserver = forkserver
        self._checkpoints = checkpoints  # shared by every agent of the master: writes go in batches
        ports = config.agent_port_range(index)
        self.total = Resources.agent_defaults(config.agent_cpus, config.agent_mem, config.agent_disk, ports,
                                              config.gpus_per_agent)
        text = config.agent_resources.get(index)
        if text and ":" not in text:  # a bare role: the whole agent is reserved to it (--default_role)
            self.total = self.total.reserve([{"type": "STATIC", "role": text.strip()}])
        elif text:  # Mesos --resources: static reservations, fake GPUs, ...
            self.total = self.total.overridden_by(parse_resources_text(text))
        self.configured = self.total  # from the flags; total also carries dynamic reservations
        self._gpus_of: Resources | None = None  # the total has_gpus was worked out from
        self._has_gpus = False
        # The embedded agents share one host, so its GPUs are split between them: this agent's are the
        # device indices after those of the agents before it (two agents both handing out GPU 0 would
        # put two tasks on one card). A real Mesos agent numbers the devices of its own host.
        self._free_gpus = list(range(first_gpu, first_gpu + int(self.total.scalar("gpus"))))
        self.frameworks: dict[str, AgentFramework] = {}
        self.completed_frameworks: deque[AgentFramework] = deque(maxlen=max(1, self.tuning.max_completed_frameworks))
        self._gc_timers: dict[str, asyncio.TimerHandle] = {}  # ended framework id -> its sandboxes' removal
        self._runners: dict[tuple[str, str], CommandRunner] = {}
        self._task_executor: dict[tuple[str, str], Executor] = {}
        self._launches: set[asyncio.Task] = set()
        self._live: set[Executor] = set()
        self._all_dead = asyncio.Event()
        self._all_dead.set()
        self.terminating = False
        self.registered_time = time.time()
        self.server: HttpServer | None = None
        self.updates = StatusUpdateManager(loop, self._forward_update, self.tuning.status_update_retry_min,
                                           self.tuning.status_update_retry_max)
        self.sessions = ExecutorSessions(self, loop, functools.partial(master.executor_message, agent_id))
        self.freeze = Freeze()  # kill -STOP / -CONT of a mesos-agent, for tests of agent loss
        self.draining: tuple[int | None, bool] | None = None  # (max_grace_period ns, mark_gone) while draining

    # -- stopped and continued (SIGSTOP / SIGCONT of a real agent) ---------
    @property
    def paused(self) -> bool:
        """Stopped: it answers neither the master's pings nor its executors."""
        return self.freeze.frozen

    def pause(self) -> None:
        if not self.terminating:
            self.freeze.stop()

    def resume(self) -> None:
        """Continue: re-register with the master first (as an agent that missed its pings does),
        then do what was held meanwhile."""
        if self.paused:
            self._loop.call_soon(self._master.reregister_agent, self)
            self.freeze.thaw(self._loop)

    def deliver(self, function: Callable[..., Any], *args: Any) -> None:
        """A message from the master: handled now, or once continued."""
        if not self.freeze.hold(function, *args):
            function(*args)

    # -- identity -----------------------------------------------------------
    @property
    def endpoint(self) -> str:
        return f"{self.hostname}:{self.port}"

    @property
    def pid(self) -> str:
        return f"slave(1)@{self.endpoint}"

    @property
    def has_gpus(self) -> bool:
        # Asked for every agent in every allocation round: the sum is redone only when total is replaced.
        if self._gpus_of is not self.total:
            self._gpus_of, self._has_gpus = self.total, self.total.scalar("gpus") > 0
        return self._has_gpus

    def agent_info(self) -> dict[str, Any]:
        return {
            "hostname": self.hostname,
            "port": self.port,
            "resources": self.total.to_json("agent", order="agent"),
            "id": {"value": self.id},
        }

    def url(self) -> dict[str, Any]:
        return {"scheme": "http", "address": {"hostname": self.hostname, "ip": self.hostname, "port": self.port},
                "path": "/slave(1)"}

    def live_tasks(self) -> dict[tuple[str, str], str]:
        """(framework id, task id) -> latest state of every task not yet ended (re-registration)."""
        return {(framework.id, task.task_id): task.state for framework in self.frameworks.values()
                for executor in framework.executors.values() for task in executor.incomplete_tasks()}

    def find_executor(self, framework_id: str, executor_id: str) -> Executor | None:
        framework = self.frameworks.get(framework_id)
        return framework.executors.get(executor_id) if framework else None

    # -- master -> agent ----------------------------------------------------
    def run_task(self, framework_info: dict[str, Any], task: dict[str, Any]) -> None:
        framework_id = framework_info["id"]["value"]
        framework = self.frameworks.get(framework_id)
        if framework is None:
            framework = self.frameworks[framework_id] = AgentFramework(framework_info)
        else:
            framework.info = framework_info
        task_id = task["task_id"]["value"]
        if self.terminating or framework.terminating:
            return  # the master already counts the task as gone
        if "executor" not in task:
            self._start_command_task(framework, task)
            return
        executor_info = task["executor"]
        executor_id = executor_info["executor_id"]["value"]
        executor = framework.executors.get(executor_id)
        agent_task = AgentTask(_for_executor(task))
        if executor is None:
            executor = self._new_executor(framework, executor_id, executor_info, command_task=False)
            executor.queued[task_id] = agent_task
            self._task_executor[(framework_id, task_id)] = executor
            self._allocate_gpus(executor, Resources.from_json(executor_info.get("resources", []))
                                + Resources.from_json(task.get("resources", [])))
            self._spawn_launch(executor, framework, None)
            return
        self._task_executor[(framework_id, task_id)] = executor
        if executor.state is ExecutorState.REGISTERING:
            self._allocate_gpus(executor, Resources.from_json(task.get("resources", [])))
            executor.queued[task_id] = agent_task
        elif executor.state is ExecutorState.RUNNING:
            self._allocate_gpus(executor, Resources.from_json(task.get("resources", [])))
            executor.launched[task_id] = agent_task
            executor.ever_sent_task = True
            executor.send({"type": "LAUNCH", "launch": {"task": agent_task.info}})
            self._checkpoint(executor, framework)
        else:
            executor.queued[task_id] = agent_task
            lost = "TASK_DROPPED" if framework.partition_aware else "TASK_LOST"
            self.agent_update(executor, task_id, lost, "REASON_EXECUTOR_TERMINATED", "Executor terminating")

    def kill_task(self, framework_id: str, task_id: str, kill_policy: dict[str, Any] | None) -> None:
        executor = self._task_executor.get((framework_id, task_id))
        framework = self.frameworks.get(framework_id)
        if framework is None:
            return
        if executor is None:
            lost = "TASK_DROPPED" if framework.partition_aware else "TASK_LOST"
            self.accept_status(None, framework_id, {
                "task_id": {"value": task_id}, "state": lost, "message": "Cannot find executor",
                "reason": "REASON_EXECUTOR_TERMINATED", "uuid": b64encode(IdGenerator.status_uuid())},
                "SOURCE_AGENT")
            return
        if executor.state in (ExecutorState.TERMINATING, ExecutorState.TERMINATED):
            return
        if task_id in executor.queued:
            self.agent_update(executor, task_id, "TASK_KILLED", "REASON_TASK_KILLED_DURING_LAUNCH",
                               "Killed before delivery to the executor")
            if not executor.ever_sent_task and not executor.queued:
                self._shutdown_executor(executor)
            return
        if executor.command_task:
            runner = self._runners.get((framework_id, task_id))
            if runner is not None:
                runner.kill(self._kill_grace(executor, task_id, kill_policy))
            return
        event: dict[str, Any] = {"task_id": {"value": task_id}}
        if kill_policy:
            event["kill_policy"] = kill_policy
        executor.send({"type": "KILL", "kill": event})

    def drain(self, max_grace_period_ns: int | None, mark_gone: bool) -> None:
        """Slave::drain: kill every task at once. A custom executor's KILL carries the task's kill
        policy capped at ``max_grace_period`` (filled in where it has none); the command executor
        keeps the task's own, as Mesos' does (trace 13). Until no executor is left, the tasks'
        TASK_KILLING and TASK_KILLED carry REASON_AGENT_DRAINING (``accept_status``)."""
        if not self._live:
            return  # nothing to drain: done at once
        self.draining = (max_grace_period_ns, mark_gone)
        for framework in list(self.frameworks.values()):
            for executor in list(framework.executors.values()):
                for task in [*executor.launched.values(), *executor.queued.values()]:
                    policy = None if executor.command_task else _capped(task.info.get("kill_policy"),
                                                                        max_grace_period_ns)
                    self.kill_task(framework.id, task.task_id, policy)

    def shutdown_executor(self, framework_id: str, executor_id: str) -> None:
        executor = self.find_executor(framework_id, executor_id)
        if executor is not None:
            self._shutdown_executor(executor)

    def shutdown_framework(self, framework_id: str) -> None:
        framework = self.frameworks.get(framework_id)
        if framework is None:
            return
        framework.terminating = True
        self.updates.remove_framework(framework_id)
        for key in [k for k in self._task_executor if k[0] == framework_id]:
            del self._task_executor[key]
        for executor in list(framework.executors.values()):
            self._shutdown_executor(executor)
        self._maybe_remove_framework(framework)

    def acknowledge(self, framework_id: str, task_id: str, uuid: str) -> None:
        if not self.updates.acknowledge(framework_id, task_id, uuid):
            return
        if self.updates.has_pending(framework_id, task_id):
            return
        executor = self._task_executor.get((framework_id, task_id))
        task = executor.find_task(task_id) if executor is not None else None
        if executor is not None and task is not None and task.terminal:
            executor.task_acknowledged_terminal(task_id)
            del self._task_executor[(framework_id, task_id)]

    def framework_message(self, framework_id: str, executor_id: str, data: str) -> None:
        executor = self.find_executor(framework_id, executor_id)
        if executor is not None and executor.state is ExecutorState.RUNNING and not executor.command_task:
            executor.send({"type": "MESSAGE", "message": {"data": data}})

    def update_framework(self, framework_info: dict[str, Any]) -> None:
        framework = self.frameworks.get(framework_info["id"]["value"])
        if framework is not None and not framework.terminating:
            framework.info = framework_info
            self.updates.resume(framework.id)

    async def stop(self, grace_period: float) -> None:
        """Kill every container (SIGTERM, SIGKILL after the grace) and close the socket."""
        self.terminating = True
        self.freeze.drop()
        self.updates.close()
        for launch in list(self._launches):
            launch.cancel()
        for executor in list(self._live):
            executor.cancel_timers()
            if executor.process is not None:
                executor.process.signal_tree(signal.SIGTERM)
            else:
                self._terminate_executor(executor, None)  # never spawned
        try:
            await asyncio.wait_for(self._all_dead.wait(), grace_period)
        except asyncio.TimeoutError:
            for executor in list(self._live):
                if executor.process is not None:
                    executor.process.signal_tree(signal.SIGKILL)
            try:
                await asyncio.wait_for(self._all_dead.wait(), 10.0)
            except asyncio.TimeoutError:
                log.error("agent %s: processes survived SIGKILL: %s", self.id,
                          [e.process.pid for e in self._live if e.process])
        if self.server is not None:
            await self.server.close()

    # -- containers ---------------------------------------------------------
    def _new_executor(self, framework: AgentFramework, executor_id: str, info: dict[str, Any],
                      command_task: bool) -> Executor:
        container_id = IdGenerator.container_id()
        directory = sandbox_path(self._config.work_dir, self.id, framework.id, executor_id, container_id)
        grace = self.tuning.executor_shutdown_grace_period
        if "shutdown_grace_period" in info:
            grace = from_nanoseconds(info["shutdown_grace_period"]["nanoseconds"])
        info = dict(info)
        if "resources" in info:
            info["resources"] = Resources.from_json(info["resources"]).to_json("refined", order="given")
        executor = Executor(
            framework_id=framework.id, executor_id=executor_id, container_id=container_id, info=info,
            directory=directory, checkpoint=bool(framework.info.get("checkpoint", False)),
            command_task=command_task, shutdown_grace_period=grace)
        framework.executors[executor_id] = executor
        self._live.add(executor)
        self._all_dead.clear()
        return executor

    def _start_command_task(self, framework: AgentFramework, task: dict[str, Any]) -> None:
        task_id = task["task_id"]["value"]
        command = task["command"]
        info: dict[str, Any] = {
            "executor_id": {"value": task_id},
            "framework_id": {"value": framework.id},
            "command": {k: v for k, v in command.items() if k in ("uris", "environment", "user")},
            "name": _command_executor_name(task_id, command),
            "source": task_id,
        }
        if "container" in task:
            info["container"] = task["container"]
        executor = self._new_executor(framework, task_id, info, command_task=True)
        executor.queued[task_id] = AgentTask(_for_executor(task))
        self._task_executor[(framework.id, task_id)] = executor
        self._allocate_gpus(executor, Resources.from_json(task.get("resources", [])))
        runner = CommandRunner(self._loop, task_id,
                               lambda status: self.accept_status(executor, framework.id, status, "SOURCE_EXECUTOR"),
                               killing_state=framework.has_capability("TASK_KILLING_STATE"))
        self._runners[(framework.id, task_id)] = runner
        self._spawn_launch(executor, framework, task)

    def _spawn_launch(self, executor: Executor, framework: AgentFramework, task: dict[str, Any] | None) -> None:
        launch = self._loop.create_task(self._launch(executor, framework, task))
        self._launches.add(launch)
        launch.add_done_callback(self._launches.discard)

    async def _launch(self, executor: Executor, framework: AgentFramework, task: dict[str, Any] | None) -> None:
        """Create the sandbox, fetch URIs, spawn; any failure ends the container."""
        command = task["command"] if task is not None else executor.info.get("command", {})
        executor.launching = True
        try:
            create_sandbox(executor.directory)
            container = (task or {}).get("container") or executor.info.get("container")
            if container:
                _note_container(executor.directory, container)
                write_secret_volumes(container, executor.directory)
            uris = command.get("uris", [])
            if uris:
                lines = await self._loop.run_in_executor(self._pool, fetch_all, uris, executor.directory)
                with open(executor.directory / "stderr", "a") as stderr:
                    stderr.writelines(f"[embedded fetcher] {line}\n" for line in lines)
            if executor.state is not ExecutorState.REGISTERING:
                # Shut down (or killed) while fetching.
                executor.launching = False
                self._terminate_executor(executor, None)
                return
            env = executor_environment(
                agent_endpoint=self.endpoint, agent_id=self.id, agent_pid=self.pid,
                framework_id=framework.id, executor_id=executor.executor_id, directory=executor.directory,
                checkpoint=executor.checkpoint, shutdown_grace_period=executor.shutdown_grace_period,
                gpus=executor.gpus if self.has_gpus else None, command=command,
                extra=_allocation_role_env(task) if task is not None else None)
            if not self._config.agents_recover:
                env[AGENT_PROCESS_ENV] = self._own_process
            argv, executable = command_argv(command)
            process = None
            warm = self._forkserver.wants(command, env) if task is None and self._forkserver else None
            if warm is not None:
                process = await self._forkserver.spawn(warm, env, executor.directory)  # type: ignore[union-attr]
            if process is None:
                process = spawn(argv, env, executor.directory, executable)
        except asyncio.CancelledError:
            executor.launching = False
            self._terminate_executor(executor, None)
            raise
        except (FetchError, OSError, ValueError) as error:
            executor.launching = False
            executor.pending_termination = Termination(
                "TASK_FAILED", "REASON_CONTAINER_LAUNCH_FAILED", f"Failed to launch container: {error}")
            _append_stderr(executor.directory, f"Failed to launch container: {error}")
            self._terminate_executor(executor, None)
            return
        executor.launching = False
        executor.process = process
        process.watch(self._loop, lambda p: self._process_exited(executor, p))
        if task is None and executor.state in (ExecutorState.TERMINATING, ExecutorState.TERMINATED):
            process.signal_tree(signal.SIGKILL)  # shut down while the fork server was forking it
            return
        # (A forked executor may already have subscribed: the fork server's reply comes later.)
        self._checkpoint(executor, framework)
        if task is not None:
            runner = self._runners[(framework.id, executor.executor_id)]
            executor.state = ExecutorState.RUNNING
            agent_task = executor.queued.pop(executor.executor_id)
            executor.launched[executor.executor_id] = agent_task
            executor.ever_sent_task = True
            runner.starting()
            runner.running(process)
        elif executor.state is ExecutorState.REGISTERING:
            executor.registration_timer = self._loop.call_later(
                self.tuning.executor_registration_timeout, self._registration_timeout, executor)

    def _registration_timeout(self, executor: Executor) -> None:
        executor.registration_timer = None
        if executor.state is not ExecutorState.REGISTERING:
            return
        timeout = format_duration(self.tuning.executor_registration_timeout)
        executor.pending_termination = Termination(
            "TASK_FAILED", "REASON_EXECUTOR_REGISTRATION_TIMEOUT", f"Executor did not register within {timeout}")
        executor.state = ExecutorState.TERMINATING
        self._destroy(executor)

    def _shutdown_executor(self, executor: Executor) -> None:
        if executor.state in (ExecutorState.TERMINATING, ExecutorState.TERMINATED):
            return
        if executor.command_task:
            executor.state = ExecutorState.TERMINATING
            runner = self._runners.get((executor.framework_id, executor.executor_id))
            if runner is not None and executor.process is not None:
                runner.kill(self.tuning.kill_grace_period)
            else:
                self._destroy(executor)
            return
        registering = executor.state is ExecutorState.REGISTERING
        executor.state = ExecutorState.TERMINATING
        if registering or not executor.send({"type": "SHUTDOWN"}):
            self._destroy(executor)
            return
        executor.kill_timer = self._loop.call_later(executor.shutdown_grace_period, self._destroy, executor)

    def _destroy(self, executor: Executor) -> None:
        """Destroy the container: SIGKILL everything; the exit watcher finishes up."""
        if self.freeze.hold(self._destroy, executor):
            return
        executor.kill_timer = None
        if executor.process is not None:
            if executor.process.alive:
                executor.process.signal_tree(signal.SIGKILL)
        elif not executor.launching:
            self._terminate_executor(executor, None)
        # else: _launch notices the state change once fetching is done

    def _process_exited(self, executor: Executor, process: ManagedProcess) -> None:
        if self.freeze.hold(self._process_exited, executor, process):
            return  # reaped once the agent continues
        runner = self._runners.pop((executor.framework_id, executor.executor_id), None) \
            if executor.command_task else None
        if runner is not None:
            runner.exited(process)
        self._terminate_executor(executor, process.returncode)

    def _terminate_executor(self, executor: Executor, returncode: int | None) -> None:
        """Slave::executorTerminated: fail live tasks, tell the master, free GPUs."""
        if executor.state is ExecutorState.TERMINATED:
            return
        executor.state = ExecutorState.TERMINATED
        executor.cancel_timers()
        if executor.stream is not None:
            executor.stream.close()
            executor.stream = None
        if executor.process is not None and executor.process.tree_alive():
            executor.process.signal_tree(signal.SIGKILL)  # leftovers die with the container
        self._free_gpus = sorted(self._free_gpus + executor.gpus)
        executor.gpus = []
        if executor.checkpoint_path is not None:
            self._checkpoints.remove(executor.checkpoint_path)
        framework = self.frameworks.get(executor.framework_id)
        if framework is not None and not framework.terminating and not self.terminating:
            termination = executor.pending_termination or Termination(
                "TASK_FAILED", "REASON_EXECUTOR_TERMINATED", "Executor terminated")
            for task in executor.incomplete_tasks():
                self.agent_update(executor, task.task_id, termination.state, termination.reason,
                                   termination.message)
        if not executor.command_task and not self.terminating:
            status = wait_status(returncode) if returncode is not None else -1
            self._loop.call_soon(self._master.exited_executor, self.id, executor.framework_id,
                                 executor.executor_id, status)
        self._runners.pop((executor.framework_id, executor.executor_id), None)
        if framework is not None:
            framework.executors.pop(executor.executor_id, None)
            framework.completed_executors.append(executor)
            self._maybe_remove_framework(framework)
        self._live.discard(executor)
        if not self._live:
            self._all_dead.set()
            self.draining = None  # Slave::updateDrainStatus: nothing left, the drain is over

    def _maybe_remove_framework(self, framework: AgentFramework) -> None:
        if framework.terminating and not framework.executors:
            self.frameworks.pop(framework.id, None)
            if len(self.completed_frameworks) == self.completed_frameworks.maxlen:
                self._collect(self.completed_frameworks[0].id)  # no longer listed: its sandboxes go now
            self.completed_frameworks.append(framework)
            self._gc_timers[framework.id] = self._loop.call_later(self.tuning.gc_delay, self._collect, framework.id)

    def _collect(self, framework_id: str) -> None:
        """Remove an ended framework's sandboxes (the agent's garbage collection), off the loop."""
        timer = self._gc_timers.pop(framework_id, None)
        if timer is not None:
            timer.cancel()
        directory = self.work_dir / "agents" / self.id / "frameworks" / framework_id
        self._loop.run_in_executor(self._pool, functools.partial(shutil.rmtree, directory, ignore_errors=True))

    def _allocate_gpus(self, executor: Executor, resources: Resources) -> None:
        wanted = int(resources.scalar("gpus"))
        taken, self._free_gpus = self._free_gpus[:wanted], self._free_gpus[wanted:]
        executor.gpus = sorted(executor.gpus + taken)

    def _kill_grace(self, executor: Executor, task_id: str, kill_policy: dict[str, Any] | None) -> float:
        policy = kill_policy or (executor.find_task(task_id) or AgentTask({})).info.get("kill_policy")
        if policy and "grace_period" in policy:
            return from_nanoseconds(policy["grace_period"]["nanoseconds"])
        return self.tuning.kill_grace_period

    # -- recovery (decided in recovery.py) ---------------------------------
    def _checkpoint(self, executor: Executor, framework: AgentFramework, then: Callable[[], None] | None = None) -> None:
        record_container(self.work_dir, self.id, executor, framework.info, self._checkpoints, then)

    def recover(self) -> list[tuple[dict[str, Any], dict[str, Any], list[tuple[dict[str, Any], str]]]]:
        """Adopt the containers a previous run left; returns (framework, executor, tasks) for the master.

        Adopted executors must re-subscribe within ``executor_reregistration_timeout``.
        """
        adopted = []
        for container in recover_containers(self.work_dir, self.id):
            framework_info, executor = container.framework_info, container.executor
            framework = self.frameworks.setdefault(executor.framework_id, AgentFramework(framework_info))
            executor.gpus = [g for g in executor.gpus if g in self._free_gpus]
            self._free_gpus = [g for g in self._free_gpus if g not in executor.gpus]
            for task_id in executor.launched:
                self._task_executor[(framework.id, task_id)] = executor
            framework.executors[executor.executor_id] = executor
            self._live.add(executor)
            self._all_dead.clear()
            process = executor.process
            assert process is not None  # adopted containers run
            process.watch(self._loop, lambda p, e=executor: self._process_exited(e, p))
            executor.registration_timer = self._loop.call_later(
                self.tuning.executor_reregistration_timeout, self._reregistration_timeout, executor)
            adopted.append((framework_info, executor.info, container.tasks))
        self._collect_left_over()
        return adopted

    def _collect_left_over(self) -> None:
        """The sandboxes of frameworks a previous run of this agent saw end (none of their containers
        is left to adopt) go ``gc_delay`` after they were last written, as Mesos' agent schedules the
        work dirs it finds at recovery."""
        root = self.work_dir / "agents" / self.id / "frameworks"
        try:
            entries = list(root.iterdir())
        except OSError:
            return
        now = time.time()
        for path in entries:
            if path.name in self.frameworks or path.name in self._gc_timers:
                continue
            try:
                age = now - path.stat().st_mtime
            except OSError:
                continue
            self._gc_timers[path.name] = self._loop.call_later(max(0.0, self.tuning.gc_delay - age), self._collect,
                                                               path.name)

    def _reregistration_timeout(self, executor: Executor) -> None:
        executor.registration_timer = None
        if executor.state is not ExecutorState.REGISTERING:
            return
        framework = self.frameworks.get(executor.framework_id)
        executor.pending_termination = reregistration_termination(
            framework is not None and framework.partition_aware, self.tuning.executor_reregistration_timeout)
        executor.state = ExecutorState.TERMINATING
        self._destroy(executor)

    # -- status updates -----------------------------------------------------
    def agent_update(self, executor: Executor, task_id: str, state: str, reason: str, message: str) -> None:
        """An update generated by the agent itself (SOURCE_AGENT, with uuid)."""
        self.accept_status(executor, executor.framework_id, {
            "task_id": {"value": task_id}, "state": state, "message": message, "reason": reason,
            "executor_id": {"value": executor.executor_id},
            "uuid": b64encode(IdGenerator.status_uuid())}, "SOURCE_AGENT")

    def accept_status(self, executor: Executor | None, framework_id: str, status: dict[str, Any],
                       source: str) -> None:
        """Slave::statusUpdate: stamp the update and hand it to the update manager."""
        if self.freeze.hold(self.accept_status, executor, framework_id, status, source):
            return
        status = dict(status)
        status["uuid"] = b64encode(b64decode(status["uuid"]))  # canonical, as protobuf re-encodes it
        status["agent_id"] = {"value": self.id}
        status["source"] = source
        now = time.time()
        if executor is not None and executor.command_task and "timestamp" in status:
            now = status["timestamp"]  # the (v0) command executor stamps update and status alike
        status_timestamp = float(status.get("timestamp", now if source == "SOURCE_AGENT" else 0.0))
        status["timestamp"] = now
        if self.draining is not None and status["state"] in ("TASK_KILLING", "TASK_KILLED"):
            status["reason"] = "REASON_AGENT_DRAINING"  # whoever sent it (Slave::statusUpdate)
            framework_info = self.frameworks.get(framework_id)
            if self.draining[1] and framework_info is not None and framework_info.partition_aware:
                status["state"] = "TASK_GONE_BY_OPERATOR"
        task_id = status["task_id"]["value"]
        if executor is not None and source == "SOURCE_EXECUTOR" and task_id not in executor.queued:
            container_status = executor.container_status(self.hostname)
            container_status.update(status.get("container_status") or {})
            status["container_status"] = container_status
        framework = self.frameworks.get(framework_id)
        executor_id = executor.executor_id if executor is not None and "executor_id" in status else None
        update = StatusUpdate(framework_id, order_status(status), executor_id, status_timestamp)

        def forward() -> None:
            if framework is not None and not framework.terminating and not self.terminating:
                self.updates.update(update)

        if executor is not None:
            error = executor.update_task_state(task_id, status["state"])
            if error is not None:
                log.warning("agent %s: dropping update: %s", self.id, error)
                return
            if framework is not None and executor.process is not None:
                self._checkpoint(executor, framework, then=forward)  # forwarded once on disk, as Mesos does
                return
        forward()

    def _forward_update(self, update: StatusUpdate) -> None:
        if self.freeze.hold(self._forward_update, update):
            return
        executor = self._task_executor.get((update.framework_id, update.task_id))
        task = executor.find_task(update.task_id) if executor is not None else None
        latest = task.state if task is not None else update.state
        self._loop.call_soon(self._master.status_update, self.id, update, latest)

    # -- state --------------------------------------------------------------
    def state_executors(self) -> list[tuple[AgentFramework, list[Executor], list[Executor]]]:
        frameworks = list(self.frameworks.values()) + list(self.completed_frameworks)
        return [(f, list(f.executors.values()), list(f.completed_executors)) for f in frameworks]


def _capped(kill_policy: dict[str, Any] | None, max_grace_period_ns: int | None) -> dict[str, Any] | None:
    """Slave::drain's calculateKillPolicy: the cap where the task's grace is missing or longer."""
    if max_grace_period_ns is None:
        return None
    grace = ((kill_policy or {}).get("grace_period") or {}).get("nanoseconds")
    if grace is None or max_grace_period_ns < grace:
        return {"grace_period": {"nanoseconds": max_grace_period_ns}}
    return None


def _for_executor(task: dict[str, Any]) -> dict[str, Any]:
    """TaskInfo as an executor sees it: resources in the post-refinement format."""
    task = dict(task)
    if "resources" in task:
        task["resources"] = Resources.from_json(task["resources"]).to_json("refined", order="given")
    if "executor" in task and "resources" in task["executor"]:
        executor = dict(task["executor"])
        executor["resources"] = Resources.from_json(executor["resources"]).to_json("refined", order="given")
        task["executor"] = executor
    return task


def _command_executor_name(task_id: str, command: dict[str, Any]) -> str:
    """Slave::getExecutorInfo's name for a synthesised command executor."""
    value = command.get("value")
    if command.get("shell", True):
        if value is None:
            detail = "(Command: NO COMMAND)"
        else:
            detail = "(Command: sh -c '" + (value[:12] + "...')" if len(value) > 15 else value + "')")
    else:
        if value is None:
            detail = "(Command: NO EXECUTABLE)"
        else:
            args = value + ", " + ", ".join(command.get("arguments", []))
            detail = "(Command: [" + (args[:12] + "...])" if len(args) > 15 else args + "])")
    return f"Command Executor (Task: {task_id}) {detail}"


def _allocation_role_env(task: dict[str, Any]) -> dict[str, str]:
    roles = Resources.from_json(task.get("resources", [])).allocation_roles() - {None}
    return {"MESOS_ALLOCATION_ROLE": next(iter(roles))} if roles else {}  # type: ignore[dict-item]


def _note_container(directory: Path, container: dict[str, Any]) -> None:
    image = (container.get("mesos") or {}).get("image") or (container.get("docker") or {}).get("image")
    if container.get("type") == "DOCKER" or image:
        name = image if isinstance(image, str) else (
            (image or {}).get("docker", {}).get("name") or (image or {}).get("appc", {}).get("name") or "?")
        _append_stderr(directory, f"[embedded agent] no container runtime: image '{name}' ignored, "
                                  "running on the host")


def _append_stderr(directory: Path, line: str) -> None:
    try:
        with open(directory / "stderr", "a") as stderr:
            stderr.write(line + "\n")
    except OSError:
        pass
