"""What a job's scheduler does once its job has ended, before it leaves: keep the job's final
record (``tfmesos status NAME``, ``tfmesos jobs``, ``tfmesos logs NAME ROLE:INDEX`` read it), and,
for ``tfmesos run --keep-serving SECONDS``, keep the API and the status page up on the final status.
``tfmesos run``, ``tfmesos.cluster()`` and ``tfrun`` (a cluster()) all keep the record with ``record_end``.
"""
from __future__ import annotations

import dataclasses
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from .http_api import ApiServer, Operations
from .console import Console
from ..mesos.agent_files import FILES, AgentFiles, agent_address_from_master, read_tail, sandbox_directories
from ..store.format import end_of
from ..core.profile import FrameworkProfile
from ..core.spec import JobSpec, TaskKey
from ..core.status import StatusSnapshot
from ..store.state_store import DEFAULT_STATE_DIR, DirStore, StateStore

log = logging.getLogger("tfmesos.scheduler.after_end")

if TYPE_CHECKING:
    from .job_shell import JobShell

ATTEMPTS_KEPT = 5  # log locations kept per task: its newest attempts
LOCATE_SECONDS = 2.0  # at most this long asking the agents where the sandboxes are (and for tails)
# The end of the newest attempt's stdout/stderr of the first tasks (chief first) is kept in the
# record too: a local run's embedded master removes its sandboxes as the run ends, and an agent's
# garbage collection does later; the record stays small (at most 8 x 2 x 16 KiB).
TAIL_TASKS, TAIL_BYTES = 8, 16 * 1024
STOPPED_ON_REQUEST = "stopped on request (POST /v1/shutdown)"  # the cause of a job that tfmesos kill ended


def local_store(spec: JobSpec, state_dir: str = "") -> DirStore:
    """The job's store in this machine's state directory (--state-dir, else $.service.state_dir,
    else the default): where a run that persists nothing while it runs still keeps its end."""
    return DirStore(state_dir or spec.service.state_dir or DEFAULT_STATE_DIR, spec.service.name)


def log_locations(sched: JobShell, task_ids: dict[str, list[Any]], master: str | None = None,
                  seconds: float = LOCATE_SECONDS) -> dict[str, list[dict[str, Any]]]:
    """ROLE:INDEX -> its newest attempts' {task_id, agent, directory}, oldest first, from the
    record's ``task_ids`` (task id -> [role, index]); the agents' /state is asked once each (an
    agent that does not answer in time leaves directory None), ``master`` about an agent that no
    offer named (one that ran a task before a scheduler restart)."""
    deadline = time.monotonic() + seconds
    by_task: dict[TaskKey, list[str]] = {}
    for task_id, (role, index) in task_ids.items():
        by_task.setdefault(TaskKey(role, index), []).append(task_id)
    wanted: dict[str, list[tuple[str, str]]] = {}
    asked: dict[str, str | None] = {}  # agent id -> the master's answer
    for key, ids in by_task.items():
        ids.sort(key=lambda tid: int(tid.rsplit(".", 1)[1]))  # ids end with the launch sequence
        current = sched.job.tasks.get(key)
        pairs = []
        for task_id in ids[-ATTEMPTS_KEPT:]:
            agent_id = sched.attempt_agents.get(task_id, current.agent_id if current else "")
            address = sched.agent_addresses.get(agent_id)
            if address is None and agent_id and master and time.monotonic() < deadline:
                if agent_id not in asked:
                    asked[agent_id] = _agent_address(master, agent_id, deadline)
                address = asked[agent_id]
            pairs.append((task_id, address or ""))
        wanted[str(key)] = pairs
    where = {task_id: address for pairs in wanted.values() for task_id, address in pairs if address}
    left = max(0.0, deadline - time.monotonic())
    directories = sandbox_directories(where, sched.framework_id or "", left) if left else {}
    located = {task: [{"task_id": t, "agent": a or None, "directory": directories.get(t)} for t, a in pairs]
               for task, pairs in wanted.items()}
    profile = sched.job.spec.profile
    for task in sorted(located, key=lambda task: _task_order(profile, task))[:TAIL_TASKS]:
        newest = located[task][-1]
        if newest["agent"] and newest["directory"] and time.monotonic() < deadline:
            newest["tail"] = {name: read_tail(AgentFiles(newest["agent"], 1.0), f"{newest['directory']}/{name}",
                                              TAIL_BYTES) for name in FILES}
    return located


def _agent_address(master: str, agent_id: str, deadline: float) -> str | None:
    """The master's word on where an agent is (None: it does not say, or cannot be asked in time)."""
    try:
        return agent_address_from_master(master, agent_id, timeout=max(0.1, deadline - time.monotonic()))
    except (OSError, ValueError) as exc:
        log.info("cannot ask the master %s for agent %s: %s", master, agent_id, exc)
        return None


def _task_order(profile: FrameworkProfile, task: str) -> tuple[int, int]:
    """ROLE:INDEX in the order the job lists its tasks (the profile's role order)."""
    role, _, index = task.partition(":")
    return (profile.rank(role), int(index or 0))


def final_record(sched: JobShell, api: str | None, master: str | None, at: float,
                 ask: str | None = None) -> dict[str, Any]:
    """The record kept of a job that ended (format 4, ``end`` filled in); ``ask``: the
    master to ask about agents (default ``master``: a zk:// one's leader is better)."""
    task_ids = sched.job.to_dict()["task_ids"]
    end = end_of(at, sched.job.progress(), log_locations(sched, task_ids, ask or master), api, master, whoami())
    return sched.store.final(sched.job, sched.framework_id, end).to_json()


def whoami() -> str | None:
    """This process' user, as kept in a record's end (``tfmesos jobs`` lists a user's own)."""
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container's): the end says no user
        return None


def keep_end(store: StateStore, rec: dict[str, Any], console: Console) -> bool:
    """Keep the record; a store that fails says so in one line and never fails the run."""
    try:
        store.keep_end(rec)
    except Exception as exc:  # noqa: BLE001 - disk full, ZooKeeper gone: the job's own end stands
        console.line(f"could not keep the job's record in {store.where}: {type(exc).__name__}: {exc}")
        return False
    return True


def record_end(sched: JobShell, store: StateStore, api: str | None, master: str | None,
               console: Console, at: float | None = None, ask: str | None = None) -> float:
    """Keep the final record of a job that has ended (at ``at``, default now) and whose framework
    is torn down (while the agents, and the embedded master's sandboxes, are still there to say
    where its logs are); returns when it ended."""
    at = time.time() if at is None else at
    keep_end(store, final_record(sched, api, master, at, ask), console)
    return at


def frozen(snapshot: StatusSnapshot, at: float) -> StatusSnapshot:
    """The final status as served after the end: it says when the job ended (the page's elapsed
    time stops there)."""
    return dataclasses.replace(snapshot, ended_at=at, now=at, connected=False)


def keep_serving(api: ApiServer, final: StatusSnapshot, ops: Operations, seconds: float, console: Console,
                 stopped_since_the_end: Callable[[], bool] = lambda: False) -> None:
    """Serve the final status, logs and metrics for ``seconds``, or until POST /v1/shutdown
    (``tfmesos kill``) or a stop signal (SIGINT, SIGTERM, SIGHUP: ``signals``); nothing can be
    acted on any more. ``stopped_since_the_end``: whether the run's own handlers heard a stop
    signal after the job ended, before these were installed (a SIGTERM sent as the end's line came):
    that one ends the serving too, at once."""
    from .signals import StopSignals

    stop = threading.Event()
    api.serve_ended(lambda: final, ops, stop.set)
    # Said under -q too: the address is what --keep-serving was asked for.
    console.line(f"job over; its status page stays on http://{api.address}/ for {seconds:g} s "
                  "(tfmesos kill or Ctrl-C ends it sooner)")
    signals = StopSignals(lambda: "the status page to stop serving", console.line).install()
    signals.arm(lambda signum: stop.set())
    if stopped_since_the_end():  # checked once ours are in: a later signal reaches them
        stop.set()
    try:
        stop.wait(seconds)
    finally:
        signals.restore()
