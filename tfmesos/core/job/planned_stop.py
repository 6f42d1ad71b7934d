"""Planned stops: a task stopped at a checkpoint because its agent leaves (a drain) or the job is
changed (``tfmesos update``), not because anything failed. The one writer of the agents leaving.

A planned stop tells each task it stops (and the peers its mode needs) before it is stopped
(docs/developers/architecture.md, "Planned stop: the notice"), and its end is no failure: it
never uses ``max_restarts`` nor ``max_job_restarts`` (counted apart, as a person's restarts are),
and only what the mode needs is placed again, off the leaving agent:
- a collective job (MultiWorkerMirroredStrategy): every worker saved at the agreed step: the
  whole job is placed again;
- a parameter-server job: the chief saves; a worker (or the chief) leaving is relaunched alone,
  with the chief, which must learn the new address; a ps leaving takes the whole job.
A task counts as stopped as planned when it was told (``stopping``) and exits 42
(``tfmesos.task.notice.PLANNED_EXIT``: saved at the step), 0 (stopped cleanly) or 143 (stopped by
SIGTERM without saving: it resumes from its last checkpoint). 137 (SIGKILL at the end of the
grace: the save did not finish) is handled as a failure is (core/job/retry_policy.py).

Entry points (``Job`` binds each):
- ``stop_gracefully(job, tr, keys, why, kind, now)``: the scheduler's own planned stop of these
  tasks (``tfmesos update``, a graceful restart): each is told, then killed with its stop grace,
  and relaunched once it has saved; the job goes on.
- ``agent_leaving(job, tr, agent_id, why, now)``: Mesos stops the tasks of a draining agent itself
  (TASK_KILLING/TASK_KILLED with REASON_AGENT_DRAINING): the peers are told, nothing more is
  placed there.
- ``agents_leaving(job, tr, leaving, now)``: the master's agents now (GET_AGENTS: deactivated or
  draining), read where the queue watch reads the master.
- ``planned_end(job, tr, rec, update, now)``: recovery asks it first of every task's end.
"""
from __future__ import annotations

from typing import Callable, Iterable, Mapping

from ..actions import Action, Kill, Notify
from ..phase import PLACING, RUNNING
from ..spec import TaskKey
from ..state import notices, tasks
from ..state.notices import PlannedEnd
from ..state.record import JobState, NoSuchTask, Transient, task_names
from ..state.tasks import TaskRecord
from ..task_state import TASK_FINISHED, StatusUpdate

AGENT_DRAINING = "REASON_AGENT_DRAINING"  # Mesos' reason on a draining agent's TASK_KILLING and TASK_KILLED
PLANNED_EXIT = 42  # tfmesos.task.notice.PLANNED_EXIT (the core imports nothing of the task side)
PLANNED_CODES = frozenset({PLANNED_EXIT, 0, 143})  # after a notice: saved, stopped cleanly, stopped on SIGTERM
DRAIN, UPDATE = "drain", "update"  # notice kinds (tfmesos.task.notice.KINDS)


def draining(update: StatusUpdate) -> bool:
    return update.reason == AGENT_DRAINING


def agent_why(hostname: str, agent_id: str, state: str = "draining") -> str:
    return f"agent {hostname or agent_id} {state}"


def agent_leaving(job: JobState, tr: Transient, agent_id: str, why: str, now: float, stops: bool = True
                  ) -> list[Action]:
    """``agent_id`` leaves (Mesos said so): nothing more is placed on it. When it ``stops`` its
    tasks (a drain: Mesos kills them), the peers their mode needs are told; a deactivated agent
    keeps its tasks running."""
    if not agent_id or agent_id in tr.leaving:
        return []
    tr.leaving[agent_id] = why
    if not stops:
        return []
    on_it = [r for r in job.tasks.values() if r.live and r.agent_id == agent_id and not r.stopping]
    return _begin(job, on_it, why, DRAIN, None)


def agents_leaving(job: JobState, tr: Transient, leaving: Mapping[str, tuple[str, str]], now: float) -> list[Action]:
    """The master's agents now that are draining or deactivated: agent id -> (hostname, "draining"
    or "deactivated"). One that is back (reactivated) may be used again."""
    for agent_id in [a for a in tr.leaving if a not in leaving]:
        del tr.leaving[agent_id]
    actions: list[Action] = []
    for agent_id, (hostname, state) in leaving.items():
        actions += agent_leaving(job, tr, agent_id, agent_why(hostname, agent_id, state), now,
                                 stops=state == "draining")
    return actions


def stop_gracefully(job: JobState, tr: Transient, keys: Iterable[TaskKey], why: str, now: float,
                    kind: str = UPDATE) -> list[Action]:
    """Stop these tasks at a checkpoint and relaunch them (and what their mode needs), without a
    failure counted: each is told (``Notify``) then killed with its stop grace; the peers the mode
    needs are told. Their ends come through ``planned_end``. Raises ValueError (naming why) when
    the job is not RUNNING or a task is not live."""
    if job.phase != RUNNING:
        raise ValueError(f"the job is {job.phase}: only a RUNNING job's tasks can be stopped at a checkpoint")
    recs = []
    for key in keys:
        rec = job.tasks.get(key)
        if rec is None:
            raise NoSuchTask(f"{key}: no such task in this job: expected {task_names(job.tasks)}")
        if not rec.live:
            raise ValueError(f"{key} is {rec.state}: only a live task can be stopped at a checkpoint")
        recs.append(rec)
    return _begin(job, [r for r in recs if not r.stopping], why, kind, now)


def _begin(job: JobState, leaving: list[TaskRecord], why: str, kind: str, kill_at: float | None) -> list[Action]:
    """Tell ``leaving`` (and kill them when ``kill_at`` is given: the scheduler stops them, not
    Mesos), and tell the peers the framework says must save with them."""
    if not leaving or job.phase not in (RUNNING, PLACING):
        return []
    actions: list[Action] = []
    for rec in leaving:
        tasks.stop_planned(rec, why)
        if kill_at is not None:  # (a drain's Kill comes from the agent: the executor writes the notice on it)
            actions.append(Notify(rec.task_id, rec.agent_id, why, kind))
            tasks.kill_sent(rec, kill_at)
            actions.append(Kill(rec.task_id, rec.agent_id))
    told = job.spec.profile.told_of_stop(job.spec, [r.key for r in leaving])
    for key in told:
        peer = job.tasks.get(key)
        if peer is not None and peer.live and not peer.stopping:
            tasks.stop_planned(peer, why)
            actions.append(Notify(peer.task_id, peer.agent_id, why, kind))
    return actions


def planned(rec: TaskRecord, update: StatusUpdate) -> bool:
    """Whether this end of a live task is a planned stop's (see the module's docstring)."""
    if not rec.stopping and not draining(update):
        return False
    if update.exit_code is None:
        return draining(update)  # stopped by the draining agent before it ran
    return update.exit_code in PLANNED_CODES


WholeJobRestart = Callable[[JobState, Transient, TaskRecord, float], "list[Action]"]


def planned_end(job: JobState, tr: Transient, rec: TaskRecord, update: StatusUpdate, now: float,
                whole_job_restart: WholeJobRestart) -> list[Action] | None:
    """The actions for a planned stop's end of ``rec`` (already ended: state/tasks.py), or None
    when this end is no planned stop's (recovery decides as for any end). ``whole_job_restart``
    is recovery's: (job, tr, rec, now) -> the actions placing the whole job again."""
    if not planned(rec, update):
        return None
    if update.state == TASK_FINISHED and job.spec.decides_success(rec.key) and not rec.stopping:
        return None  # a success: it decides the job's end
    why = rec.stopping or tr.leaving.get(rec.agent_id) or agent_why(rec.hostname, rec.agent_id)
    moving = rec.agent_id in tr.leaving or draining(update)
    if draining(update) and rec.agent_id not in tr.leaving:
        tr.leaving[rec.agent_id] = why  # no TASK_KILLING came first (it is optional)
    leaving = moving or (rec.killing_since > 0 and not rec.relaunch_after_kill)  # stopped itself, not a peer
    whole_job = job.spec.profile.restarts_whole_job(job.spec, rec.key) and job.phase == RUNNING
    tasks.planned_end(rec, avoid=moving, now=now)
    notices.planned_ended(job, tr, PlannedEnd(rec.key, update, why, leaving, whole_job, rec.planned_stops))
    actions: list[Action] = whole_job_restart(job, tr, rec, now) if whole_job else []
    if job.spec.profile.saves_for_job(job.spec, rec.key):
        actions += _second_kills(job, tr)
    elif leaving:
        _bound_the_told(job, rec, now)
    return actions


def _bound_the_told(job: JobState, left: TaskRecord, now: float) -> None:
    """The leaving task has ended: a peer told to save (a chief) that still runs is given the stop
    grace to do so, then killed and relaunched (a script that does not save would hold the
    planned stop, and the relaunch waiting on it, for ever: ``settling``)."""
    for rec in job.tasks.values():
        if rec is not left and rec.live and rec.stopping and not rec.relaunch_after_kill:
            tasks.kill_for_relaunch(rec, now + job.spec.policies.stop_grace_seconds)


def _second_kills(job: JobState, tr: Transient) -> list[Action]:
    """The chief has saved: a server told and stopped (it serves on while the chief saves) is
    stopped for good (its second SIGTERM)."""
    out: list[Action] = []
    for rec in job.tasks.values():
        role = job.spec.role(rec.key.role)
        if rec.live and rec.stopping and role is not None and job.spec.profile.is_server(role) \
                and (rec.agent_id in tr.leaving or rec.killing_since > 0):
            out.append(Kill(rec.task_id, rec.agent_id))
    return out


def settling(job: JobState) -> bool:
    """A planned stop is under way: some task told of it still runs (the tasks it relaunches are
    placed together once all have stopped: a parameter-server chief with the worker it must know)."""
    return any(r.stopping and r.live for r in job.tasks.values())
