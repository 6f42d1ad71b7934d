"""``tfmesos run``: start (or resume) one job on a Mesos master and see it to its end.

A front-end of ``session.Session``, which starts and stops what the job needs (master, store,
scheduler, API, driver). What is ``tfmesos run``'s own: the console, resuming a recorded job (or
starting it afresh when Mesos forgot its framework), the summary, the exit codes: 0 the job
succeeded and nothing it started is still running; 1 it failed; 5 it was stopped on request
(``tfmesos kill``); 128 + N a signal N stopped it (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP: see
``signals``). What differs under Marathon (a finished job served until the app is removed,
SIGTERM as a restart) is in ``marathon_app``.
"""
from __future__ import annotations

import functools
import signal
import sys
from typing import Any, TextIO

from ..api.status_text import task_row
from ..core.tensorflow.hints import failure_hints
from ..core.job.job import Job
from ..core.phase import FAILED, KILLED, SUCCEEDED
from ..core.spec import JobSpec
from ..errors import MesosRefusal, TfmesosError, cut
from . import after_end, marathon_app as marathon
from .console import Console
from .run_settings import RunSettings
from .session import Session
from .signals import StopSignals, StoppedBeforeStart, signal_name
from .task_output import sandbox_stderr_tail

__all__ = ["RunSettings", "STOPPED_EXIT", "Console", "end_code", "print_summary", "run_job"]

STOPPED_EXIT = 5  # the job was stopped on request (tfmesos kill): it ended KILLED, not failed


def run_job(spec: JobSpec, options: dict[str, Any], settings: RunSettings, out: TextIO = sys.stdout) -> int:
    console = Console(out, settings.quiet, settings.tf_noise)
    local = settings.master is None
    signals = StopSignals(
        lambda: "the job to start", console.line,
        # Under Marathon, SIGTERM on a real cluster is a restart: the next instance takes the job over.
        leave=lambda signum: signum == signal.SIGTERM and marathon.leaves_on_sigterm(local),
        give_up_note="" if local else (
            f"the framework was not torn down: Mesos ends its tasks service.failover_timeout "
            f"({spec.service.failover_timeout:g} s) after this scheduler left, unless it is started again"),
    ).install()
    try:
        session = Session(spec, options, settings, console, signals=signals,
                          on_end_note=functools.partial(_end_note, console)).open()
        try:
            code = _run(session)
            if code == _START_AFRESH and session.store is not None:
                console.event("Mesos no longer knows the recorded framework: starting the job afresh")
                session.forget_record()
                code = _run(session)
            return code
        finally:
            session.close()
    except StoppedBeforeStart as exc:
        console.line(f"stopped by {signal_name(exc.signum)} before the job started; nothing was left running")
        return int(exc.code)  # type: ignore[arg-type]
    finally:
        signals.restore()


_START_AFRESH = -1


def _end_note(console: Console, end: str, text: str) -> None:
    """A failure or a success is said once, in the summary; a stop is said at once too (the tasks'
    kill may take their grace period: a Ctrl-C is answered before that)."""
    if end == KILLED:
        console.event(text)


def _run(session: Session) -> int:
    """One attempt at the job on the session's master: its end's exit code, or _START_AFRESH."""
    spec, console, master, signals = session.spec, session.console, session.master, session.signals
    assert signals is not None
    saved = session.saved()
    if saved is not None and saved.finished and marathon.serves_recorded_end(saved.deployment):
        final = Job.from_dict(spec, saved.job).snapshot()
        return marathon.serve_recorded_end(spec.service.name, saved.to_json(), final, session.ended_api, console,
                                           session.operations())
    job, framework_id = session.job_to_run()
    try:
        sched = session.start(job, framework_id)
        try:
            session.subscribe()
            result = session.wait()
            heard_at_end = signals.received  # a stop signal after this one also ends --keep-serving
            if sched.refusal is not None and not (framework_id and "Framework has been removed" in sched.refusal):
                session.teardown(failover=True)  # nothing to tear down, or another scheduler owns the job now
                from ..mesos.driver import refusal_hint

                raise MesosRefusal(f"the Mesos master at {master} refused the framework", sched.refusal,
                                   refusal_hint(sched.refusal))
            if sched.persist_error is not None:
                session.teardown(failover=False)  # no state: a new scheduler could not adopt them
                raise TfmesosError("stopped the job", sched.persist_error,
                                   "check the state directory (--state-dir) or ZooKeeper (--zk): space, permissions")
        except TfmesosError:
            raise
        except (RuntimeError, OSError, ValueError, TypeError) as exc:
            # pymesos re-raises its IO thread's error here (e.g. HTTP 401 from the master; a
            # TypeError when an error reply's body came in a later packet: a pymesos bug). The
            # driver is gone; tasks already launched keep running until failover_timeout.
            if not sched.subscribed_once:
                from ..mesos.driver import refusal_hint

                why = str(exc) if "HTTP" in str(exc) else f"an error reply pymesos could not read ({type(exc).__name__}: {exc})"
                raise MesosRefusal(f"the Mesos master at {master} refused the subscription", cut(why, 300),
                                   refusal_hint("authenticat" if "401" in str(exc) else str(exc))) from None
            hint = " (check service.principal and the MESOS_SECRET variable)" if "401" in str(exc) else ""
            console.line(f"lost the Mesos master at {master}: {exc}{hint}")
            if session.local:  # it stops with this run, and every task with it
                console.line("the embedded master stops with this run: the job's tasks are killed")
            elif sched.job.launch_seq:
                console.line("the job's tasks keep running; start the same command again to resume it"
                             + ("" if session.store else " (no state was persisted: tasks end at failover_timeout)"))
            return 1
        if framework_id and "Framework has been removed" in result.cause:
            session.teardown(failover=True)
            return _START_AFRESH
        # The job is over: tear the framework down (Mesos kills anything left) and forget it.
        session.teardown(failover=False)
        # Its record is kept (tfmesos status NAME, jobs, logs NAME ...), gathered while the summary prints.
        session.keep_end(session.store or after_end.local_store(spec, session.settings.state_dir))
        print_summary(console, sched, result.end, result.cause)
        code = end_code(result.end, signals.exit_code)
        if session.settings.keep_serving > 0:  # its page served on, as asked
            assert session.api is not None
            after_end.keep_serving(session.api, after_end.frozen(sched.snapshot(), session.ended()), session.operations(),
                                 session.settings.keep_serving, console,
                                 stopped_since_the_end=lambda: signals.received > heard_at_end)
        else:  # a tfmesos logs --follow that was reading reads the last lines before the API goes
            sched.logs.linger()
        session.ended()
        if session.keeps_finished:  # recorded finished with the Done (JobStore.record)
            final = sched.snapshot()
            session.end_attempt()
            # Logs (sandboxes outlive the job) and metrics stay readable; nothing can be acted on.
            return marathon.serve_until_removed(session.ended_api, lambda: final, console, session.operations(), code)
        if session.store:
            session.forget_record()
        return code
    finally:
        session.end_attempt()


def end_code(end: str, signal_code: int | None) -> int:
    """The exit code of a run whose job ended ``end``; ``signal_code``: 128 + the stop signal's."""
    if end == SUCCEEDED:
        return 0
    if end == KILLED:
        return signal_code or STOPPED_EXIT
    return 1


def print_summary(console: Console, sched: Any, end: str, cause: str) -> None:
    """The job's end, a line per task, and the last lines of every task that failed: the summary
    (``Console.summary``: the last of the job's lines printed)."""
    console.summary(summary_lines(sched, end, cause))


def summary_lines(sched: Any, end: str, cause: str) -> list[str]:
    snap = sched.snapshot()
    lines = [f"job {snap.name} {end}: {cause}"]
    lines += ["  " + task_row(t) for t in snap.tasks]
    if end == FAILED:
        for rec in sched.job.tasks.values():
            # A task whose executor ended before it ran has no output of its own: its sandbox's stderr says why.
            tail = rec.log_tail or sandbox_stderr_tail(sched.logs.read, rec)
            if tail and rec.state not in ("TASK_FINISHED", "TASK_KILLED"):
                lines.append(f"last lines of {rec.key} ({rec.task_id}){'' if rec.log_tail else ', its sandbox stderr'}:")
                lines += [f"  | {line}" for line in tail.splitlines()[-10:]]
                lines += [f"  hint: {hint}" for hint in failure_hints(tail)]
    return lines
