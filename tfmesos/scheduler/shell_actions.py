"""The core's actions carried out, for one job's shell: the job recorded first when the core asks
for it (a ``Persist`` leads the list), what the job has to say told, then each action turned into
a Mesos call through the adapter (a gang's launches pipelined). Called with the job's lock held."""
from __future__ import annotations

import itertools
import logging
from typing import TYPE_CHECKING, Any, Callable

from ..core import actions as act
from ..core.phase import FAILED, PLACING, RUNNING
from ..core.spec import TaskKey
from ..mesos.messages import ClusterSpecMessage, StopNotice, encode
from ..mesos.taskinfo import OfferLedger, build_task_info

if TYPE_CHECKING:
    from .job_shell import JobShell

log = logging.getLogger("tfmesos.scheduler.shell_actions")


class ActionRunner:
    """Carries out the core's actions for ``shell``; keeps the offers' JSON until a launch or a
    decline uses it."""

    def __init__(self, shell: JobShell):
        self.shell = shell
        self.raw_offers: dict[str, dict[str, Any]] = {}  # an offer's JSON by id: a launch draws from it
        # (the core's ClusterSpec message, it deflated, that encoded): built once per version, for
        # the TaskInfos that carry it and for each SendClusterSpec
        self._spec: tuple[Any, ClusterSpecMessage | None, str] = (None, None, "")
        self._told: set[str] = set()  # task ids told of their stop (a Notify): their Kill needs no notice of its own

    def apply(self, actions: list[act.Action], changed: TaskKey | None = None) -> None:
        """Persist first, then act: a task id is on disk before Mesos hears of it. The core says
        when (a Persist action leads the list); the shell just obeys. ``changed``: the one task
        the event was about (the store's journal writes only it, when it can)."""
        shell = self.shell
        if any(isinstance(a, act.Persist) for a in actions) and shell.store.persists and shell.framework_id:
            try:
                # Once the job is over and finished jobs are kept, the record says finished: it is on
                # disk before the framework is torn down, so a scheduler restarted in between serves
                # the end instead of finding its framework removed and running the job again.
                shell.store.record(shell.job, shell.framework_id, changed)
            except Exception as exc:  # noqa: BLE001 - any store failure (disk full, ZooKeeper gone)
                # Nothing is launched that a restarted scheduler could not find again: stop here.
                shell.persist_error = f"cannot save the job's state in {shell.store.where}: {type(exc).__name__}: {exc}"
                shell.finish(act.Done(FAILED, shell.persist_error))
                return
        self._tell()
        for launching, run in itertools.groupby(actions, lambda a: isinstance(a, act.Launch)):
            group = list(run)
            if launching and shell.mesos.pipelines_launches and len(group) > 1:  # a gang: its ACCEPTs pipelined
                _carry_out("Launch", self._launch_together, group)
            else:
                for a in group:
                    _carry_out(type(a).__name__, self._apply_one, a)
        shell.cond.notify_all()

    def _tell(self) -> None:
        """What the job told (its events, its tasks' states), to the front-end: the notice that
        says how the job ends to its own hook, where it has one."""
        hooks = self.shell.hooks
        for notice in self.shell.job.take_notices():
            if notice.end is not None and hooks.end_note is not None:
                hooks.end_note(notice.end, notice.text)
            else:
                hooks.event(notice.text)

    def offers_in(self, raw: dict[str, dict[str, Any]]) -> None:
        self.raw_offers.update(raw)

    def offer_gone(self, offer_id: str) -> None:
        self.raw_offers.pop(offer_id, None)

    def _task_infos(self, a: act.Launch) -> list[dict[str, Any]]:
        shell = self.shell
        raw = self.raw_offers.pop(a.offer_id)
        ledger = OfferLedger(raw, shell.spec.service.revocable)
        inline = None
        if a.cluster_spec is not None:  # a small gang's: in each TaskInfo (core/job/cluster_spec_sync.py)
            shell.metrics.clusterspec_sent(shell.clock() - shell.job.started_at)
            inline = self._spec_message(a.cluster_spec)[0]
        infos = [build_task_info(shell.spec, t, a.agent_id, ledger, shell.settings, inline) for t in a.tasks]
        for t in a.tasks:
            shell.hooks.event(f"launch {t.key} as {t.task_id} on {a.hostname}:{t.port}")
            shell.metrics.launched(t.key, t.restarts)
            shell.places.ran(t.task_id, a.agent_id)
        return infos

    def _launch_together(self, launches: list[act.Launch]) -> None:
        """A gang's launches, handed to the driver's sender: this thread goes back to events."""
        calls = [(a.offer_id, self._task_infos(a)) for a in launches]

        def answered(result: list[str | None] | Exception) -> None:
            if isinstance(result, Exception):  # the tasks never start: their startup timeout relaunches them
                log.error("could not carry out %d Launches: %s: %s", len(launches), type(result).__name__, result)
                return
            for a, refused in zip(launches, result):
                if refused is not None:
                    log.error("could not carry out Launch of %s: %s", ", ".join(str(t.key) for t in a.tasks), refused)

        self.shell.mesos.launch_many(calls, answered)

    def _spec_message(self, message: dict[str, Any]) -> tuple[ClusterSpecMessage, str]:
        """The core's ClusterSpec message deflated, and encoded as a framework message."""
        if self._spec[0] is not message:  # the core hands out one message per version
            deflated = ClusterSpecMessage.of(message["version"], message["cluster"])
            self._spec = (message, deflated, encode(deflated))
        assert self._spec[1] is not None
        return self._spec[1], self._spec[2]

    def _apply_one(self, a: act.Action) -> None:
        shell = self.shell
        mesos = shell.mesos
        if isinstance(a, act.Launch):
            mesos.launch(a.offer_id, self._task_infos(a))
        elif isinstance(a, act.Decline):
            shell.metrics.offers_declined.inc(len(a.offer_ids))
            for oid in a.offer_ids:
                self.raw_offers.pop(oid, None)
            if a.offer_ids:
                mesos.decline(list(a.offer_ids), a.refuse_seconds)
        elif isinstance(a, act.Notify):
            self._told.add(a.task_id)
            mesos.send(a.task_id, a.agent_id, encode(StopNotice(a.task_id, a.reason, a.kind)), ordered=True)
        elif isinstance(a, act.Kill):
            if a.task_id not in self._told:
                # A KILL of the scheduler's that is no planned stop says so first (kind "": the task
                # gets SIGTERM alone, as ever), so that an agent's KILL that comes without any
                # message is known for a drain's. Framework messages and KILLs keep their order.
                self._told.add(a.task_id)
                restart = shell.job.phase in (RUNNING, PLACING)
                why = "the job restarts from its checkpoint" if restart else "the job stops"
                _carry_out("StopNotice", mesos.send, a.task_id, a.agent_id, encode(StopNotice(a.task_id, why, "")),
                           ordered=True)
            mesos.kill(a.task_id)
        elif isinstance(a, act.AcceptInverseOffers):
            mesos.accept_inverse_offers(list(a.inverse_offer_ids))
        elif isinstance(a, act.SendClusterSpec):
            shell.metrics.clusterspec_sent(shell.clock() - shell.job.started_at)
            mesos.send(a.task_id, a.agent_id, self._spec_message(a.message)[1])
        elif isinstance(a, act.Revive):
            mesos.revive()
        elif isinstance(a, act.Suppress):
            mesos.suppress()
        elif isinstance(a, act.Reconcile):
            mesos.reconcile(list(a.task_ids))
        elif isinstance(a, act.Done):
            shell.result = a
            shell.done.set()


def _carry_out(what: str, do: Callable[..., None], *args: Any, **kwargs: Any) -> None:
    try:
        do(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - e.g. not connected; the core retries via tick/reconcile
        log.error("could not carry out %s: %s: %s", what, type(exc).__name__, exc,
                  exc_info=log.isEnabledFor(logging.DEBUG))
