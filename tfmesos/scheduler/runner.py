"""``tfmesos run``: start (or resume) one job on a Mesos master and see it to its end.

The imperative shell around the core: the embedded master when no --master is given, the
state store, the pymesos driver, the HTTP API, the console. Exit code 0 means the job
succeeded and nothing it started is still running; 1 it failed; 5 it was stopped on request
(``tfmesos kill``); 128 + N a signal N stopped it (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP: see
``signals``). What differs under Marathon (a finished job served until the app is removed,
SIGTERM as a restart) is in ``marathon_lifecycle``.
"""
from __future__ import annotations

import functools
import logging
import os
import signal
import sys
import time
from dataclasses import dataclass
from typing import Any, TextIO

from .http_api import TOKEN_ENV, ApiServer, Operations, Refused
from ..core.hints import missing_program_hint
from .task_output import sandbox_stderr_tail
from ..core.job import FAILED, KILLED, SUCCEEDED, Job, job_seed
from ..errors import MesosRefusal, TfmesosError, UsageError, cut, mute_library_logs
from .console import Console
from .embedded import EMBEDDED, start_embedded_master
from .live_jobs import refuse_duplicate, running_frameworks
from . import job_end, marathon_app as marathon
from ..mesos.driver import await_subscription, driver_class, framework_info, refusal_hint, stop_driver
from ..mesos.operator import role_quota
from ..mesos.taskinfo import ExecutorSettings
from ..options.load import OptionsError
from .preflight import DEFAULT_STATE_DIR, check_state_dir, state_dir_of
from .job_shell import Hooks, JobShell
from ..store.job_store import JobStore, resumable_with
from .signals import StopSignals, StoppedBeforeStart, signal_name
from ..core.spec import JobSpec
from ..api.status_text import task_row
from ..store.format import StateFormatError
from ..store.state_store import StateStore, open_store

log = logging.getLogger("tfmesos.scheduler.runner")

STOPPED_EXIT = 5  # the job was stopped on request (tfmesos kill): it ended KILLED, not failed


@dataclass
class RunSettings:
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
    connect_timeout: float = 30.0
    keep_serving: float = 0.0  # seconds the API and the page stay up after the end (--keep-serving)


def _load_or_create(store: StateStore | None, spec: JobSpec, options: dict[str, Any], console: Console) -> tuple[Job, str | None]:
    saved = _load_state(store)
    if saved and saved.get("finished"):
        # Outside Marathon (marathon_lifecycle, handled before) a finished record does not hold the name: run anew.
        console.event(f"job {spec.service.name!r} ended before ({saved['job'].get('phase')}); starting it anew")
        saved = None
    if not saved:
        return Job.new(spec, time.time(), seed=job_seed(spec.service.name)), None
    if not resumable_with(saved, options):
        raise OptionsError(
            [f"$.service.name: a job named {spec.service.name!r} is still recorded in {store.where} "  # type: ignore[union-attr]
             f"(framework {saved.get('framework_id')}) with other options: expected the same options to resume it, "
             "or another service name"]
        )
    job = Job.from_dict(spec, saved["job"], seed=job_seed(spec.service.name))
    console.event(f"resuming job {spec.service.name!r} as framework {saved['framework_id']} (state in {store.where})")  # type: ignore[union-attr]
    return job, saved["framework_id"]


def _load_state(store: StateStore | None) -> dict[str, Any] | None:
    try:
        return store.load() if store else None
    except StateFormatError as exc:
        raise UsageError(f"the job's state in {store.where}", str(exc)) from None  # type: ignore[union-attr]
    except ValueError as exc:  # not JSON: a file edited or cut short by hand
        raise UsageError(f"the job's state in {store.where}", f"unreadable ({cut(str(exc), 100)})",  # type: ignore[union-attr]
                         "remove it to start the job afresh") from None


def run_job(spec: JobSpec, options: dict[str, Any], settings: RunSettings, out: TextIO = sys.stdout) -> int:
    console = Console(out, settings.quiet)
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
        return _run_job(spec, options, settings, console, signals)
    except StoppedBeforeStart as exc:
        console.line(f"stopped by {signal_name(exc.signum)} before the job started; nothing was left running")
        return int(exc.code)  # type: ignore[arg-type]
    finally:
        signals.restore()


def _run_job(spec: JobSpec, options: dict[str, Any], settings: RunSettings, console: Console,
             signals: StopSignals) -> int:
    master_proc = None
    if where := state_dir_of(spec, settings.master, settings.state_dir, settings.zk):
        check_state_dir(*where)  # local checks first: before any wait for the network
    _check_zk(spec, settings)  # before the embedded master starts: nothing to clean up
    if settings.master is None:
        master_proc, spec = start_embedded_master(spec, settings, console)
        master = master_proc.address
        signals.scratch.append(str(master_proc.work_dir))
    else:
        from .reach import check_master

        master = check_master(settings.master, settings.connect_timeout)

    # The embedded master dies with us, so a local run only persists state when asked to.
    persist = settings.master is not None or bool(settings.state_dir or settings.zk)
    try:
        store = _open_store(spec, settings) if persist else None
    except BaseException:
        if master_proc is not None:
            master_proc.stop()
        raise
    try:
        code = _run(spec, options, settings, master, store, console, signals, local=master_proc is not None)
        if code == _START_AFRESH and store is not None:
            console.event("Mesos no longer knows the recorded framework: starting the job afresh")
            store.clear()
            code = _run(spec, options, settings, master, store, console, signals, local=master_proc is not None)
        return code
    finally:
        if store:
            store.close()
        if master_proc is not None:
            signals.waiting_for = lambda: "the embedded master to stop its executors"
            master_proc.stop()


_START_AFRESH = -1


def _open_store(spec: JobSpec, settings: RunSettings) -> StateStore:
    """The state store, reached within the connect timeout; a plain error when it cannot be used."""
    zk = settings.zk or spec.service.zk
    if zk:
        return open_store(zk, "", spec.service.name)
    flag = "--state-dir" if settings.state_dir else "$.service.state_dir"
    directory = os.path.expanduser(settings.state_dir or spec.service.state_dir or DEFAULT_STATE_DIR)
    check_state_dir(directory, flag)
    store = open_store("", directory, spec.service.name)
    if os.path.lexists(store.where) and not os.path.isfile(store.where):
        raise UsageError(flag, f"{store.where!r} is not a regular file", "expected it to hold the job's state: remove it")
    return store


def _check_zk(spec: JobSpec, settings: RunSettings) -> None:
    """The state's ZooKeeper, reached within the connect timeout (kazoo would raise a bare timeout)."""
    from .reach import parse_zk_url, zk_session

    zk = settings.zk or spec.service.zk
    if settings.master is None and not (settings.zk or settings.state_dir):
        return  # a local run persists nothing unless asked to (see run_job)
    if zk:
        flag = "--zk" if settings.zk else "$.service.zk"
        servers, _ = parse_zk_url(zk, flag)
        with zk_session(",".join(map(str, servers)), settings.connect_timeout, flag):
            pass


def _start_api(spec: JobSpec, settings: RunSettings, *handlers: Any, ops: Operations | None = None) -> ApiServer:
    port = spec.service.api_port if settings.api_port is None else settings.api_port
    flag = "--api-port" if settings.api_port is not None else "$.service.api_port"
    try:
        api = ApiServer(*handlers, settings.api_host, port, ops)
    except OSError as exc:
        raise UsageError(flag, f"cannot listen on {settings.api_host}:{port}: {exc.strerror}",
                         "expected a free port (0 picks one), or stop what uses it") from None
    api.start()
    return api


def _operations(spec: JobSpec, **handlers: Any) -> Operations:
    """The API's operations, behind the API token when there is one."""
    return Operations(**handlers, token=os.environ.get(TOKEN_ENV, ""), token_reads=spec.service.api_token_reads)


def _ended_api(spec: JobSpec, settings: RunSettings) -> marathon.StartApi:
    """How the API of a job that is over starts: its status, no ClusterSpec, shutdown ends the serving."""
    return lambda snapshot, stop, ops: _start_api(spec, settings, snapshot, lambda: None, stop, ops=ops)


def _run(spec: JobSpec, options: dict[str, Any], settings: RunSettings, master: str, store: StateStore | None,
         console: Console, signals: StopSignals, local: bool) -> int:
    saved = _load_state(store)
    if saved and saved.get("finished") and marathon.under_marathon():
        final = Job.from_dict(spec, saved["job"]).snapshot()
        return marathon.serve_recorded_end(spec.service.name, saved, final, _ended_api(spec, settings), console,
                                           _operations(spec))
    job, framework_id = _load_or_create(store, spec, options, console)
    if not local:
        refuse_duplicate(running_frameworks(master, spec.service.principal, os.environ.get("MESOS_SECRET", "")),
                         spec.service.name, framework_id, master)
    sched = JobShell(
        job, ExecutorSettings(python=spec.python or sys.executable, framework_user=spec.service.user),
        JobStore(store, options, keep_finished=marathon.keeps_finished(store is not None)), framework_id=framework_id,
        hooks=Hooks(console.event, console.output, console.progress),
        quota_probe=None if local else functools.partial(
            role_quota, master, principal=spec.service.principal, secret=os.environ.get("MESOS_SECRET", "")),
    )

    def shutdown() -> None:
        sched.request_stop(job_end.STOPPED_ON_REQUEST)

    def restart(task: str) -> str:
        try:
            return sched.restart(task)
        except ValueError as exc:
            raise Refused(409, str(exc)) from None

    ops = _operations(spec, logs=sched.logs.read, restart=restart, metrics=sched.metrics.render)
    api: ApiServer = _start_api(spec, settings, sched.snapshot, lambda: sched.job.spec_message(), shutdown, ops=ops)
    live = job_end.announce(spec, settings.state_dir, api.address)  # tfmesos status NAME finds it
    try:
        console.event(f"scheduler API on http://{api.address}/v1/status")
        console.event(f"status page on http://{api.address}/")
        from pymesos import MesosSchedulerDriver

        mute_library_logs()  # pymesos' import set its own log level

        api_host, api_port = api.address.rsplit(":", 1)
        webui = f"http://{os.environ.get('HOST') or api_host}:{api_port}"  # HOST: the agent's name under Marathon
        secret = os.environ.get("MESOS_SECRET") or None
        driver = driver_class(MesosSchedulerDriver)(
            sched,
            framework_info(spec, framework_id, webui),
            master,
            use_addict=False,
            implicit_acknowledgements=True,
            principal=spec.service.principal or None,
            secret=secret if spec.service.principal else None,
            failover=True,  # a crash must not tear the job down: a restarted scheduler takes over
        )
        sched.driver = driver
        signals.waiting_for = lambda: _waiting_for(sched)
        signals.arm(lambda signum: sched.request_stop(signals.cause))
        driver.start()
        try:
            await_subscription(sched, driver, master, settings.connect_timeout, spec)
            result = sched.run_until_done()
            if sched.refusal is not None and not (framework_id and "Framework has been removed" in sched.refusal):
                stop_driver(sched, driver, failover=True)  # nothing to tear down, or another scheduler owns the job now
                raise MesosRefusal(f"the Mesos master at {master} refused the framework", sched.refusal,
                                   refusal_hint(sched.refusal))
            if sched.persist_error is not None:
                stop_driver(sched, driver, failover=False)  # no state: a new scheduler could not adopt them
                raise TfmesosError("stopped the job", sched.persist_error,
                                   "check the state directory (--state-dir) or ZooKeeper (--zk): space, permissions")
        except TfmesosError:
            raise
        except (RuntimeError, OSError, ValueError, TypeError) as exc:
            # pymesos re-raises its IO thread's error here (e.g. HTTP 401 from the master; a
            # TypeError when an error reply's body came in a later packet: a pymesos bug). The
            # driver is gone; tasks already launched keep running until failover_timeout.
            if not sched.subscribed_once:
                why = str(exc) if "HTTP" in str(exc) else f"an error reply pymesos could not read ({type(exc).__name__}: {exc})"
                raise MesosRefusal(f"the Mesos master at {master} refused the subscription", cut(why, 300),
                                   refusal_hint("authenticat" if "401" in str(exc) else str(exc))) from None
            hint = " (check service.principal and the MESOS_SECRET variable)" if "401" in str(exc) else ""
            console.line(f"lost the Mesos master at {master}: {exc}{hint}")
            if local:  # it stops with this run, and every task with it
                console.line("the embedded master stops with this run: the job's tasks are killed")
            elif sched.job.launch_seq:
                console.line("the job's tasks keep running; start the same command again to resume it"
                             + ("" if store else " (no state was persisted: tasks end at failover_timeout)"))
            return 1
        if framework_id and "Framework has been removed" in result.cause:
            stop_driver(sched, driver, failover=True)
            return _START_AFRESH
        # The job is over: tear the framework down (Mesos kills anything left) and forget it.
        stop_driver(sched, driver, failover=False)
        print_summary(console, sched, result.end, result.cause)
        code = end_code(result.end, signals.exit_code)
        # Its record is kept (tfmesos status NAME, jobs, logs NAME ...); its page served on if asked.
        job_end.after_end(sched, store or job_end.local_store(spec, settings.state_dir),
                          api, master, console, settings.keep_serving,
                          _operations(spec, logs=sched.logs.read, metrics=sched.metrics.render))
        if marathon.keeps_finished(store is not None):  # recorded finished with the Done (JobStore.record)
            final = sched.snapshot()
            api.stop()
            api = None
            # Logs (sandboxes outlive the job) and metrics stay readable; nothing can be acted on.
            return marathon.serve_until_removed(_ended_api(spec, settings), lambda: final, console,
                                                _operations(spec, logs=sched.logs.read, metrics=sched.metrics.render), code)
        if store:
            store.clear()
        return code
    finally:
        live.withdraw()
        if api:
            api.stop()


def end_code(end: str, signal_code: int | None) -> int:
    """The exit code of a run whose job ended ``end``; ``signal_code``: 128 + the stop signal's."""
    if end == SUCCEEDED:
        return 0
    if end == KILLED:
        return signal_code or STOPPED_EXIT
    return 1


def _waiting_for(sched: JobShell) -> str:
    """What a stopping run waits for (said at a second Ctrl-C)."""
    if not sched.subscribed_once and not sched.done.is_set():
        return "the Mesos master to answer the subscription (at most --connect-timeout)"
    if not sched.done.is_set():
        with sched.cond:
            return sched.job.waiting_for()
    return "the framework's teardown by the Mesos master"


def print_summary(console: Console, sched: JobShell, end: str, cause: str) -> None:
    snap = sched.snapshot()
    console.line(f"job {snap.name} {end}: {cause}")
    for t in snap.tasks:
        console.line("  " + task_row(t))
    if end == FAILED:
        for rec in sched.job.tasks.values():
            # A task whose executor ended before it ran has no output of its own: its sandbox's stderr says why.
            tail = rec.log_tail or sandbox_stderr_tail(sched.logs.read, rec)
            if tail and rec.state not in ("TASK_FINISHED", "TASK_KILLED"):
                console.line(f"last lines of {rec.key} ({rec.task_id}){'' if rec.log_tail else ', its sandbox stderr'}:")
                for line in tail.splitlines()[-10:]:
                    console.line(f"  | {line}")
                if hint := missing_program_hint(tail):
                    console.line(f"  hint: {hint}")
