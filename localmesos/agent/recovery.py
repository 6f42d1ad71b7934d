"""Checkpoints that let a restarted master (same ``work_dir``) recover.

``<work_dir>/meta/agents.json`` keeps each agent's id and port, so agents come
back with the same id at the same ``MESOS_AGENT_ENDPOINT``.  One file per
live container (``meta/agents/<agent>/containers/<container>.json``) records
who started which process: its records appended as JSON lines, the last whole
one current (as a Mesos agent appends a task's status updates to its
``task.updates``: a new file per update is an inode allocated and one freed,
~0.1-0.8 ms each on a busy ext4, three times per task of a big gang).  After a restart, containers of checkpointing
frameworks' custom executors whose process still runs are re-adopted (the
executor re-subscribes, as pymesos does with ``MESOS_CHECKPOINT=1``); every
other surviving container is killed, as a real agent destroys unknown ones.

The agent keeps the bookkeeping (registering what is adopted, its timers,
watching its process); what goes into a record and what becomes of each
recorded container after a restart is decided here.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
from concurrent.futures import Executor as ThreadPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .containers import AgentTask, Executor, ExecutorState, Termination
from ..durations import format_duration
from .procs import ManagedProcess, start_time
from ..resources import Resources

log = logging.getLogger(__name__)


def _meta(work_dir: Path) -> Path:
    return work_dir / "meta"


def _write_atomically(path: Path, value: Any) -> None:
    """``value`` as JSON (a ``str`` is taken as JSON already encoded), readable by this user only:
    a checkpointed TaskInfo holds its data, where a framework may pass a task its secrets."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(value if isinstance(value, str) else json.dumps(value))
    os.replace(temporary, path)


def load_agents(work_dir: Path) -> list[dict[str, Any]]:
    """[{"id": ..., "port": ...}] of the previous run, or []."""
    try:
        return list(json.loads((_meta(work_dir) / "agents.json").read_text()))
    except (OSError, ValueError):
        return []


def save_agents(work_dir: Path, agents: list[dict[str, Any]]) -> None:
    _write_atomically(_meta(work_dir) / "agents.json", agents)


def agent_entry(agent_id: str, port: int, configured: Resources, total: Resources) -> dict[str, Any]:
    """What agents.json keeps of an agent: id and port, and its resources as configured and as
    they now are (dynamic reservations made through the operator API), as a Mesos agent
    checkpoints its resources."""
    return {"id": agent_id, "port": port, "configured": configured.to_json("refined"),
            "total": total.to_json("refined")}


def restored_total(entry: dict[str, Any], configured: Resources) -> Resources | None:
    """The agent's resources with its dynamic reservations from before a restart, or None when
    there are none or its configured resources have changed since (Mesos refuses such an agent's
    re-registration; here it starts afresh from the new configuration)."""
    if "total" not in entry or "configured" not in entry:
        return None
    try:
        if Resources.from_json(entry["configured"]) != configured:
            log.warning("agent %s: resources changed since the last run: its dynamic reservations are dropped",
                        entry.get("id"))
            return None
        return Resources.from_json(entry["total"])
    except (ValueError, KeyError, TypeError):
        return None


def container_path(work_dir: Path, agent_id: str, container_id: str) -> Path:
    return _meta(work_dir) / "agents" / agent_id / "containers" / f"{container_id}.json"


RECORD_FILE_MAX_BYTES = 64 * 1024  # past this a container's file is rewritten with its newest record alone


def checkpoint_container(path: Path, record: dict[str, Any] | str) -> None:
    """Append ``record`` (a ``str`` is JSON already encoded) as one line: a write torn by a crash
    leaves the line before it current. A file grown past RECORD_FILE_MAX_BYTES is replaced by one
    holding this record alone (written aside, then renamed over it)."""
    line = (record if isinstance(record, str) else json.dumps(record)) + "\n"
    try:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)  # readable by this user only
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        data = line.encode()
        try:
            if os.fstat(fd).st_size + len(data) <= RECORD_FILE_MAX_BYTES:
                while data:
                    data = data[os.write(fd, data):]
                return
        finally:
            os.close(fd)
        _write_atomically(path, line)
    except OSError as error:  # losing a checkpoint only loses recoverability
        log.warning("cannot checkpoint %s: %s", path, error)


def _newest_record(text: str) -> dict[str, Any]:
    """The last line of a container's file that is a whole JSON object (ValueError: none is)."""
    for line in reversed(text.splitlines()):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            return record
    raise ValueError("no whole record")


def remove_container(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def load_containers(work_dir: Path, agent_id: str) -> list[tuple[Path, dict[str, Any]]]:
    directory = _meta(work_dir) / "agents" / agent_id / "containers"
    found = []
    for path in sorted(directory.glob("*.json")):
        try:
            found.append((path, _newest_record(path.read_text())))
        except (OSError, ValueError):
            remove_container(path)
    return found


class CheckpointWriter:
    """Container records rewritten off the event loop: in order per file, the newest wins.

    A record is rewritten on every status update of its tasks. One writer serves every agent of
    the master and hands the pool a batch at a time: everything queued while the previous batch
    was on disk goes out in one job, so a 1,000-task gang costs the loop a few pool jobs instead
    of thousands (each job wakes a thread and crosses the GIL twice). A write or removal not yet
    handed over is replaced by a newer one of the same file; a batch starts only when the one
    before it is done, so writes of a file never overtake each other. ``then`` callbacks
    (forwarding the update to the master, as Mesos forwards an update only once checkpointed) run
    in the loop once a record holding their update is on disk. The first record of a container
    is written at once instead (``record_container``), so a master killed right after a launch
    still finds the process.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, pool: ThreadPool) -> None:
        self._loop = loop
        self._pool = pool
        self._waiting: dict[Path, tuple[str | None, list[Callable[[], None]]]] = {}  # None: remove
        self._busy = False  # a batch is with the pool

    def write(self, path: Path, record: str, then: Callable[[], None] | None = None) -> None:
        self._queue(path, record, then)

    def remove(self, path: Path) -> None:
        self._queue(path, None, None)

    def _queue(self, path: Path, record: str | None, then: Callable[[], None] | None) -> None:
        callbacks = self._waiting.get(path, (None, []))[1]
        if then is not None:
            callbacks.append(then)
        self._waiting[path] = (record, callbacks)
        if not self._busy:
            self._next()

    def _next(self) -> None:
        batch, self._waiting = self._waiting, {}
        if not batch:
            self._busy = False
            return
        self._busy = True
        try:
            done = self._loop.run_in_executor(self._pool, _carry_out, [(p, r) for p, (r, _) in batch.items()])
        except RuntimeError:  # the pool is shut down: the master is stopping
            self._busy = False
            self._callbacks(batch)
            return

        def written(_: Any) -> None:
            self._callbacks(batch)
            self._next()

        done.add_done_callback(written)

    @staticmethod
    def _callbacks(batch: dict[Path, tuple[str | None, list[Callable[[], None]]]]) -> None:
        for _, callbacks in batch.values():
            for callback in callbacks:
                callback()


def _carry_out(batch: list[tuple[Path, str | None]]) -> None:
    for path, record in batch:
        if record is None:
            remove_container(path)
        else:
            checkpoint_container(path, record)


# -- what is recorded -------------------------------------------------------
def record_container(work_dir: Path, agent_id: str, executor: Executor, framework_info: dict[str, Any],
                     writer: CheckpointWriter | None = None, then: Callable[[], None] | None = None) -> None:
    """Record a spawned, live container so that a restarted master can adopt or kill it;
    ``then`` runs once the record is on disk (at once when there is nothing to record)."""
    if executor.process is None or executor.state is ExecutorState.TERMINATED:
        if then is not None:
            then()
        return
    record = container_record(executor, framework_info)
    if executor.checkpoint_path is None or writer is None:
        executor.checkpoint_path = container_path(work_dir, agent_id, executor.container_id)
        checkpoint_container(executor.checkpoint_path, record)  # the first one at once
        if then is not None:
            then()
    else:
        writer.write(executor.checkpoint_path, record, then)


def container_record(executor: Executor, framework_info: dict[str, Any]) -> str:
    """The record of a spawned container as JSON: who started which process, and its live tasks.

    Only custom executors of checkpointing frameworks are marked recoverable.
    """
    process = executor.process
    if process is None:
        raise ValueError(f"container {executor.container_id} has no process to record")
    return executor.checkpoint_text(lambda: {
        "framework_info": framework_info,
        "executor_info": executor.info,
        "container_id": executor.container_id,
        "directory": str(executor.directory),
        "recoverable": executor.checkpoint and not executor.command_task,
        "pid": process.pid,
        "start_time": start_time(process.pid),
        "gpus": executor.gpus,
        "shutdown_grace_period": executor.shutdown_grace_period,
    }, (framework_info, executor.info, executor.gpus, process))


# -- what becomes of it after a restart -------------------------------------
@dataclass
class AdoptedContainer:
    """A recorded container whose process still runs, taken over by the restarted agent."""

    framework_info: dict[str, Any]
    executor: Executor  # REGISTERING until the executor re-subscribes; ``gpus`` as recorded
    tasks: list[tuple[dict[str, Any], str]]  # (TaskInfo, state) of its live tasks, for the master


def recover_containers(work_dir: Path, agent_id: str) -> list[AdoptedContainer]:
    """Settle every container the previous run recorded for ``agent_id``.

    Its process is gone (or the pid was reused): the record is removed.  Not
    recoverable: the process group is killed and the record removed.
    Recoverable: it comes back as an adopted container.
    """
    adopted = []
    for path, record in load_containers(work_dir, agent_id):
        pid = int(record.get("pid", 0))
        alive = pid > 0 and start_time(pid) == record.get("start_time")
        if not alive:
            remove_container(path)
            continue
        process = ManagedProcess.adopt(pid, record.get("directory", ""))
        if not record.get("recoverable"):
            process.signal_tree(signal.SIGKILL)
            remove_container(path)
            continue
        framework_info = record["framework_info"]
        info = record["executor_info"]
        executor = Executor(
            framework_id=framework_info["id"]["value"], executor_id=info["executor_id"]["value"],
            container_id=record["container_id"], info=info, directory=Path(record["directory"]),
            checkpoint=True, command_task=False, shutdown_grace_period=record["shutdown_grace_period"],
            process=process, ever_sent_task=True, checkpoint_path=path, gpus=list(record.get("gpus", [])))
        tasks = []
        for entry in record.get("tasks", []):
            task = AgentTask(entry["info"], entry["state"])
            executor.launched[task.task_id] = task
            tasks.append((entry["info"], entry["state"]))
        adopted.append(AdoptedContainer(framework_info, executor, tasks))
    return adopted


def reregistration_termination(partition_aware: bool, timeout: float) -> Termination:
    """Why an adopted executor that did not re-subscribe within ``timeout`` seconds is destroyed."""
    return Termination("TASK_GONE" if partition_aware else "TASK_LOST", "REASON_EXECUTOR_REREGISTRATION_TIMEOUT",
                       f"Executor did not reregister within {format_duration(timeout)}")
