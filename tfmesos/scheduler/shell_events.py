"""Mesos events into one job's shell: what ``mesos.driver``'s adapter calls (its ``JobEvents``), on
pymesos' IO thread. Each takes the job's lock, hands the event to the core's ``Job``, and has its
actions carried out (shell_actions.py); the shell's own bookkeeping (the connection, where
attempts ran, the metrics) is kept on the way."""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from ..core import actions as act
from ..core.phase import FAILED, FINISHING
from ..core.placement.maintenance import InverseOffer
from ..core.task_state import TASK_FAILED, TASK_FINISHED, TASK_KILLED, StatusUpdate
from ..mesos.agent_files import agent_address_from_offer
from ..mesos.events import OffersArrived, Subscribed
from ..mesos.messages import NeedSpec, OutputLines, Progress

if TYPE_CHECKING:
    from .job_shell import JobShell

# The ends its agent reported, so its sandbox answers: a task LOST, UNREACHABLE or GONE is on an
# agent the master cannot reach, whose files API would only hold this thread (and the relaunch).
ENDS_AN_AGENT_REPORTS = frozenset({TASK_FINISHED, TASK_FAILED, TASK_KILLED})


class MesosEvents:
    """The adapter's ``JobEvents`` for ``shell``."""

    def __init__(self, shell: JobShell):
        self.shell = shell

    def subscribed(self, event: Subscribed) -> None:
        shell = self.shell
        with shell.cond:
            shell.connected = True
            if shell.disconnected_at is not None and shell.subscribed_once:
                shell.hooks.event(f"the Mesos master is back after {shell.clock() - shell.disconnected_at:.0f} s")
            shell.subscribed_once, shell.disconnected_at = True, None
            shell.framework_id = event.framework_id
            if event.again:
                shell.hooks.event(f"re-registered as framework {shell.framework_id}; reconciling")
            else:
                shell.hooks.event(f"registered as framework {shell.framework_id} with {event.master}")
            shell.actions.apply(shell.job.start())
            streamed = shell.output.streamed_task_ids() if event.again else []
        if streamed:  # messages sent while the master (or this scheduler) was away are lost: read them back
            threading.Thread(target=shell.output.catch_up, args=(streamed,), name="tfmesos-catch-up", daemon=True).start()

    def disconnected(self) -> bool:
        shell = self.shell
        with shell.cond:
            shell.lost_master(shell.clock())
            shell.actions.raw_offers.clear()
            shell.job.offers_gone()
            shell.cond.notify_all()
            return shell.refusal is not None or shell.done.is_set()

    def offers_arrived(self, event: OffersArrived) -> None:
        shell = self.shell
        with shell.cond:
            shell.actions.offers_in(event.raw)
            for o in event.offers:
                shell.places.agent_at(o.agent_id, agent_address_from_offer(event.raw[o.id]) or "")
            shell.metrics.offers_received.inc(len(event.offers))
            shell.actions.apply(shell.job.offers(list(event.offers), shell.clock()))

    def offer_rescinded(self, offer_id: str) -> None:
        shell = self.shell
        with shell.cond:
            shell.actions.offer_gone(offer_id)
            shell.job.rescinded(offer_id)

    def inverse_offers(self, offers: list[InverseOffer]) -> None:
        shell = self.shell
        with shell.cond:
            shell.actions.apply(shell.job.inverse_offers(offers, shell.clock()))

    def inverse_offer_rescinded(self, inverse_offer_id: str) -> None:
        with self.shell.cond:
            self.shell.job.inverse_offer_rescinded(inverse_offer_id)

    def status_update(self, update: StatusUpdate) -> None:
        shell = self.shell
        if update.state in ENDS_AN_AGENT_REPORTS and update.task_id in shell.output.streamed_task_ids():
            shell.output.catch_up([update.task_id])  # its last lines before its end (and the job's)
        with shell.cond:
            job = shell.job
            key = job.key_of(update.task_id)
            if key is not None and update.task_id == job.tasks[key].task_id:  # its current attempt
                rec = job.tasks[key]
                shell.places.ran(update.task_id, update.agent_id)
                shell.metrics.task_ended(key, update.state, update.reason,
                                         counts=rec.live and not rec.relaunch_after_kill and job.phase != FINISHING)
            # What a person is told of it the core composes (core/state/notices.py), once.
            shell.actions.apply(job.status(update, shell.clock()), changed=key)

    def protocol_mismatch(self, reason: str) -> None:
        shell = self.shell
        with shell.cond:
            if not shell.job.terminal:
                shell.actions.apply(shell.job.abort(reason, shell.clock()))

    def executor_said(self, message: Any) -> None:
        shell = self.shell
        if isinstance(message, OutputLines):
            shell.output.message(message)
            return
        if isinstance(message, NeedSpec):
            with shell.cond:
                shell.actions.apply(shell.job.executor_asks_cluster_spec(message.task_id))
        if isinstance(message, Progress) and isinstance(message.values, dict):
            with shell.cond:
                shell.job.report(message.task_id, message.values, shell.clock())
                key = shell.job.key_of(message.task_id)
                progress = shell.job.progress_of(key) if key else None
            if key is not None and progress is not None:
                shell.hooks.progress(str(key), progress)

    def agent_lost(self, agent_id: str) -> None:
        self.shell.hooks.event(f"agent {agent_id} lost")

    def master_error(self, message: str) -> None:
        shell = self.shell
        with shell.cond:
            if shell.refusal is not None:
                return  # the run is already ending for the first one
            shell.refusal = message
            shell.hooks.event(f"error from the master: {message}")
            shell.finish(act.Done(FAILED, f"Mesos master: {message}"))
