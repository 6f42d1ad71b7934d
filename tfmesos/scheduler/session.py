"""One running job, from its master to its end: the ``Session`` that ``tfmesos run``, ``tfrun`` and
``tfmesos.cluster()`` are front-ends of.

A session owns what a running job needs, and starts and stops it in this order:

1. ``open()``: the local checks (state directory, ZooKeeper), the claim on the job's name (a second
   run of a live name is refused: ``live_run``), the master (the embedded one, in this process or as
   a child, or a remote one reached within the connect timeout), the state store;
2. ``start(job, framework_id)``: the ``JobShell``, the API server (announced in the state
   directory), the Mesos driver; ``subscribe()``: SUBSCRIBED within the connect timeout;
3. ``wait()``: until the job ends (``stop(why)`` ends it from elsewhere: a signal, ``close()``);
4. ``teardown(failover)``: the framework torn down (Mesos kills what is left) or left to a successor;
   ``keep_end()``: the job's final record, gathered while the front-end prints its summary;
5. ``close()``: the API, the store and the master, in that order, then the name; idempotent.

The front-ends keep only what differs: the console and exit codes of ``tfmesos run`` (with its
Marathon lifecycle, ``marathon_app``), the servers-in-a-``with``-block of ``cluster()``, worker 0
on this machine for ``tfrun``. The heavy modules (the driver, the embedded master) are imported
where they are first needed, so a command that fails a local check never pays for them.

The Mesos driver: tfmesos' own (``mesos/scheduler_driver.py``), or pymesos' where ``--driver
pymesos`` or ``TFMESOS_DRIVER=pymesos`` asks for it (the ``pymesos`` extra: ``driver_choice``).
"""
from __future__ import annotations

import os
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from ..api import routes
from ..core.job.job import Job
from ..core.phase import ENDED_PHASES, KILLED
from ..core.state.record import job_seed
from ..core.spec import JobSpec
from ..errors import UsageError
from ..options.load import OptionsError
from . import after_end as job_end
from .console import Console
from .embedded import start_embedded_master
from .live_run import LiveRun
from .preflight import DEFAULT_STATE_DIR, check_state_dir, local_fit_problems, state_dir_of, state_zk
from .run_settings import RunSettings, SessionKind

if TYPE_CHECKING:
    from ..store.format import JobRecord
    from ..store.state_store import StateStore
    from .http_api import ApiServer, Operations
    from ..core.actions import Done as RunResult
    from .job_shell import JobShell
    from .signals import StopSignals


OWN, PYMESOS = "own", "pymesos"
DRIVERS = (OWN, PYMESOS)
DRIVER_VARIABLE = "TFMESOS_DRIVER"


def driver_choice(flag: str, variable: str) -> str:
    """The driver ``--driver`` names, else TFMESOS_DRIVER, else tfmesos' own."""
    choice = flag or variable.strip() or OWN
    if choice not in DRIVERS:
        raise UsageError("--driver" if flag else DRIVER_VARIABLE, f"{choice!r} is no driver",
                         f"expected one of {', '.join(DRIVERS)}")
    return choice


def check_pymesos_installed(flag: str) -> None:
    import importlib.util

    if importlib.util.find_spec("pymesos") is None:
        raise UsageError(flag, "pymesos is not installed",
                         "install the pymesos extra (python tools/install_pymesos.py in this environment), "
                         "or use tfmesos' own driver (the default)")


class Session:
    """One running job: master, state store, scheduler, API, Mesos driver, clock (see the module)."""

    def __init__(self, spec: JobSpec, options: dict[str, Any], settings: RunSettings, console: Console, *,
                 kind: SessionKind = SessionKind(), signals: StopSignals | None = None,
                 on_event: Callable[[str], None] | None = None, clock: Callable[[], float] = time.time,
                 on_end_note: Callable[[str, str], None] | None = None):
        self.spec, self.options, self.settings, self.console = spec, options, settings, console
        self.kind, self.signals, self.clock = kind, signals, clock
        self.on_event = on_event or console.event
        self.on_end_note = on_end_note  # the event saying how the job ends (None: an event like the others)
        self.master = ""  # the master's address, once open
        self.master_proc: Any = None  # the embedded master (LocalMaster or ChildMaster)
        self.store: StateStore | None = None
        self.sched: JobShell | None = None
        self.api: ApiServer | None = None
        self.driver: Any = None  # while subscribed and not torn down
        self._live: LiveRun | None = None  # the claim on the job's name and its live marker
        self._ending: threading.Thread | None = None  # keep_end's, joined by close()
        self._end_at = 0.0
        self._closed = False
        self._record: tuple[JobRecord | None] | None = None  # saved()'s answer, once read (1-tuple: None is an answer)
        self._token: str | None = None  # the API's token (job_token), once known
        self._launched_digest: str | None = None  # a resumed record's, once updated (JobStore.updated)
        self._token_kept: list[Callable[[], None]] = []  # removes what job_token kept, at close()

    @property
    def local(self) -> bool:
        """The embedded master runs the job (it stops with this session, and every task with it)."""
        return self.settings.master is None

    @property
    def persists(self) -> bool:
        if self.kind.persist is not None:
            return self.kind.persist
        # The embedded master dies with us, so a local run only persists state when asked to.
        return not self.local or bool(self.settings.state_dir or self.settings.zk)

    # ------------------------------------------------------------------ 1. master and store
    def open(self) -> "Session":
        """Local checks first (before any wait for the network), then the master, then the store."""
        s = self.settings
        try:
            if self.driver_kind == PYMESOS:
                check_pymesos_installed("--driver" if s.driver else DRIVER_VARIABLE)
            if where := state_dir_of(self.spec, s.master, s.state_dir, s.zk):
                check_state_dir(*where)
            self._live = LiveRun(self.spec.service.name, job_end.local_store(self.spec, s.state_dir).path.parent,
                                 "embedded" if self.local else str(s.master), self.on_event).claim()
            if self.persists:
                self._check_zk()  # before the embedded master starts: nothing to clean up
            if self.local:
                if problems := local_fit_problems(self.spec, s):  # what the embedded agents could never hold
                    raise OptionsError(problems)
                self.master_proc, self.spec = start_embedded_master(self.spec, s, self.console,
                                                                    child=self.kind.child_master)
                self.master = self.master_proc.address
                if self.signals is not None:
                    self.signals.scratch.append(str(self.master_proc.work_dir))
            else:
                from .reach import check_master

                self.master = check_master(s.master, s.connect_timeout, self.console.event)  # type: ignore[arg-type]
            if self.persists:
                self.store = self._open_store()
                self._live.claim_zk(self.store)
        except BaseException:
            self.close()
            raise
        return self

    def _check_zk(self) -> None:
        """The state's ZooKeeper, reached within the connect timeout (kazoo would raise a bare timeout)."""
        zk = state_zk(self.spec, self.settings.state_dir, self.settings.zk)
        if zk:
            from .reach import parse_zk_url, zk_session

            flag = "--zk" if self.settings.zk else "$.service.zk"
            servers, _ = parse_zk_url(zk, flag)
            with zk_session(",".join(map(str, servers)), self.settings.connect_timeout, flag, self.console.event):
                pass

    def _open_store(self) -> StateStore:
        """The state store, reached within the connect timeout; a plain error when it cannot be used."""
        from ..store.state_store import open_store

        s, spec = self.settings, self.spec
        zk = state_zk(spec, s.state_dir, s.zk)
        if zk:
            return open_store(zk, "", spec.service.name)
        flag = "--state-dir" if s.state_dir else "$.service.state_dir"
        directory = os.path.expanduser(s.state_dir or spec.service.state_dir or DEFAULT_STATE_DIR)
        check_state_dir(directory, flag)
        store = open_store("", directory, spec.service.name)
        if os.path.lexists(store.where) and not os.path.isfile(store.where):
            raise UsageError(flag, f"{store.where!r} is not a regular file", "expected it to hold the job's state: remove it")
        return store

    def saved(self) -> JobRecord | None:
        """The job's record as its store reads it (``JobStore.saved``): None without a store or a record.
        Read once, before the job runs (the runner's Marathon check and job_to_run both ask): only
        the running job writes it afterwards, and ``forget_record`` clears it."""
        from ..store.job_store import JobStore

        if self._record is None:
            self._record = (JobStore(self.store, self.options).saved(),)
        return self._record[0]

    def forget_record(self) -> None:
        """Clear the job's state (store and the record ``saved`` read once) before a run anew."""
        if self.store is not None:
            self.store.clear()
        self._record = None

    def job_to_run(self) -> tuple[Job, str | None]:
        """The recorded job to resume (and its framework id), else a new one."""
        from ..store.job_store import JobStore

        spec, store = self.spec, self.store
        saved = self.saved()
        if saved is not None and saved.finished:
            # Outside Marathon, or of another deployment of the app (a restart of the same one
            # serves it: runner), a finished record does not hold the name: run anew.
            self.on_event(f"job {spec.service.name!r} ended before ({saved.job.get('phase')}); starting it anew")
            saved = None
        if saved is None:
            return Job.new(spec, self.clock(), seed=job_seed(spec.service.name)), None
        options = JobStore(store, self.options).options_to_resume(saved, self.options)
        if options is not self.options:  # started with the options an update replaced: the update's
            self.options, self.spec = options, self.spec_of(options)
            spec = self.spec
            self.on_event(f"job {spec.service.name!r} was updated (tfmesos update): resuming it with the update's options")
        self._launched_digest = saved.launched_digest
        job, framework_id = JobStore(store, self.options).resume(saved, spec, self.options,
                                                                 seed=job_seed(spec.service.name))
        self.on_event(f"resuming job {spec.service.name!r} as framework {framework_id} "
                      f"(state in {store.where})")  # type: ignore[union-attr]
        return job, framework_id

    # ------------------------------------------------------------------ 2. scheduler, API, driver
    def start(self, job: Job, framework_id: str | None = None) -> JobShell:
        """Schedule ``job``: its API up and announced, its driver started (``subscribe`` waits)."""
        from ..mesos.driver import framework_info
        from ..mesos.taskinfo import ExecutorSettings
        from ..store.job_store import JobStore
        from . import marathon_app
        from .job_shell import Hooks, JobShell, ignore
        from .secret_values import read_values

        spec, kind, secret = self.spec, self.kind, os.environ.get("MESOS_SECRET", "")
        remote = not self.local and kind.remote_checks
        if remote:
            from .live_jobs import refuse_duplicate, running_frameworks

            refuse_duplicate(running_frameworks(self.master, spec.service.principal, secret),
                             spec.service.name, framework_id, self.master)
        quota_probe = cluster_probe = None
        if kind.remote_checks:
            import functools

            from ..mesos.operator import cluster_state, role_quota

            # The embedded master too: does the job fit its agents at all, what holds it back.
            cluster_probe = functools.partial(cluster_state, self.master, principal=spec.service.principal,
                                              secret=secret)
            if remote:
                quota_probe = functools.partial(role_quota, self.master, principal=spec.service.principal,
                                                secret=secret)
        sched = self.sched = JobShell(
            job, ExecutorSettings(python=spec.python or sys.executable, framework_user=spec.service.user,
                                  secrets=read_values(spec.secrets, os.environ)),
            JobStore(self.store, self.options, keep_finished=self.keeps_finished,
                     deployment=marathon_app.deployment(), launched_digest=self._launched_digest),
            framework_id=framework_id,
            hooks=Hooks(self.on_event, self.console.output, self.console.progress if kind.progress else ignore,
                        self.on_end_note),
            clock=self.clock, quota_probe=quota_probe, cluster_probe=cluster_probe,
        )
        self.api = self._start_api(sched.snapshot, lambda: sched.job.cluster_spec_message(),
                                   lambda: sched.request_stop(job_end.STOPPED_ON_REQUEST), self.operations(live=True))
        if self._live is not None:  # tfmesos status NAME finds it, and the job's last state
            self._live.announce(self.api.address)
            self._live.watch(sched.snapshot)
        api_host, api_port = self.api.address.rsplit(":", 1)
        if api_host in ("0.0.0.0", "::"):  # listening everywhere: this machine's name (no DNS lookup)
            import socket

            api_host = os.environ.get("HOST") or socket.gethostname()  # HOST: the agent's name under Marathon
        shown = f"{api_host}:{api_port}"  # a shell's own HOST does not rename an API bound to 127.0.0.1
        self.on_event(f"scheduler API on http://{shown}{routes.STATUS}")
        self.on_event(f"status page on http://{shown}/")

        webui = f"http://{shown}"
        driver = self._new_driver(sched, framework_info(spec, framework_id, webui), secret)
        sched.driver = driver
        if self.signals is not None:
            signals = self.signals
            signals.last_words.append(self._given_up)
            signals.waiting_for = self.waiting_for
            signals.arm(lambda signum: sched.request_stop(signals.cause))
        driver.start()
        self.driver = driver
        return sched

    def _new_driver(self, sched: JobShell, info: dict[str, Any], secret: str) -> Any:
        """The Mesos scheduler driver the session's choice names (``driver_choice``), not started."""
        spec = self.spec
        creds = {"principal": spec.service.principal or None,
                 "secret": (secret or None) if spec.service.principal else None,
                 "failover": self.kind.failover}  # tfmesos run: a crash must not tear the job down
        if self.driver_kind == PYMESOS:
            from ..mesos.pymesos_driver import load

            self.on_event("the Mesos driver is pymesos (--driver pymesos or TFMESOS_DRIVER)")
            return load()(sched, info, self.master, use_addict=False, implicit_acknowledgements=True, **creds)
        from ..mesos.scheduler_driver import SchedulerDriver

        return SchedulerDriver(sched.mesos, info, self.master, implicit_acknowledgements=True, **creds)

    @property
    def driver_kind(self) -> str:
        return driver_choice(self.settings.driver, os.environ.get(DRIVER_VARIABLE, ""))

    def subscribe(self) -> None:
        """Until SUBSCRIBED (or the job ends: a refusal, a stop), within the connect timeout;
        ``UnreachableError`` with the driver stopped when the master never answers."""
        from ..mesos.driver import await_subscription

        driver, self.driver = self.driver, None  # await_subscription stops it if it fails
        await_subscription(self.sched, driver, self.master, self.settings.connect_timeout, self.spec)
        self.driver = driver

    @property
    def keeps_finished(self) -> bool:
        from . import marathon_app

        return marathon_app.keeps_finished(self.store is not None)

    def operations(self, live: bool = False) -> Operations:
        """The API's operations (logs and metrics; restart while the job runs, where the session kind
        offers it), writes behind the job's token (job_token)."""
        from .http_api import Operations, Refused

        handlers: dict[str, Any] = {}
        sched = self.sched
        if sched is not None:
            handlers = {"logs": sched.logs.read, "metrics": sched.metrics.render}
            if live:
                handlers["health"] = sched.loop_health
            if live and self.kind.restart:
                def restart(task: str) -> str:
                    from ..core.state.record import NoSuchTask

                    try:
                        return sched.restart(task)  # type: ignore[union-attr]
                    except NoSuchTask as exc:  # the caller's mistake: 400, as /v1/logs answers it
                        raise Refused(400, str(exc)) from None
                    except ValueError as exc:  # not now (the job not RUNNING, the task not live)
                        raise Refused(409, str(exc)) from None

                handlers["restart"] = restart
                handlers["update"] = self._update
        return Operations(**handlers, token=self.job_token(), token_reads=self.spec.service.api_token_reads)

    def spec_of(self, options: dict[str, Any]) -> JobSpec:
        """The spec new options describe, as this session runs a job (the embedded master's
        checkpoint directory where it gave one): OptionsError naming each problem."""
        from ..options.jobspec import job_spec_from_options

        spec = job_spec_from_options(options)
        if self.master_proc is not None and not spec.checkpoint_dir:
            from .embedded import with_checkpoints

            spec = with_checkpoints(spec, self.master_proc.work_dir)
        return spec

    def _update(self, document: Any, dry_run: bool) -> dict[str, Any]:
        """POST /v1/update: the job's new options (tfmesos update resolved them; checked again here)."""
        from ..core.job.update import UpdateRefused
        from ..options.load import resolve_options
        from .http_api import Refused

        sched = self.sched
        assert sched is not None
        try:
            options = resolve_options(document)
            diff = sched.update(self.spec_of(options), options, dry_run)
        except OptionsError as exc:
            raise Refused(400, str(exc), exc.problems) from None
        except UpdateRefused as exc:
            raise Refused(409 if exc.now else 400, str(exc), exc.problems) from None
        if not dry_run:  # the job's own event says it (core/job/update.py)
            self.spec, self.options = sched.spec, options
        return {"dry_run": dry_run, "changes": [str(c) for c in diff.changes], "added": [str(k) for k in diff.added],
                "removed": [str(k) for k in diff.removed], "restarts": [str(k) for k in diff.restarts],
                "whole_job": diff.whole_job, "saving": [str(k) for k in diff.saving], "plan": diff.lines()}

    def job_token(self) -> str:
        """The token the API wants for writes: TFMESOS_API_TOKEN's (the operator's own: nothing
        kept), else one made for this job, kept where its owner's ``tfmesos kill NAME`` finds it
        (api_token_keeper). Always, loopback included: on a shared host any user reaches 127.0.0.1."""
        if self._token is None:
            from ..api.token import api_token, new_token

            token = api_token()
            if not token:
                from .api_token_keeper import keep

                token = new_token()
                self._token_kept = keep(token, self.spec, self.settings.state_dir, self.store, self.on_event)
            self._token = token
        return self._token

    def _start_api(self, snapshot: Callable[[], Any], cluster: Callable[[], Any], shutdown: Callable[[], None],
                   ops: Operations) -> ApiServer:
        from .http_api import ApiServer

        s = self.settings
        port = self.spec.service.api_port if s.api_port is None else s.api_port
        flag = "--api-port" if s.api_port is not None else "$.service.api_port"
        try:
            api = ApiServer(snapshot, cluster, shutdown, s.api_host, port, ops)
        except OSError as exc:
            raise UsageError(flag, f"cannot listen on {s.api_host}:{port}: {exc.strerror}",
                             "expected a free port (0 picks one), or stop what uses it") from None
        api.start()
        return api

    def ended_api(self, snapshot: Callable[[], Any], stop: Callable[[], None], ops: Operations) -> ApiServer:
        """The API of a job that is over: its status, no ClusterSpec, shutdown ends the serving."""
        return self._start_api(snapshot, lambda: None, stop, ops)

    # ------------------------------------------------------------------ 3. running
    def wait(self) -> RunResult:
        """Until the job ends (with the pymesos driver, its IO thread's error is raised here)."""
        assert self.sched is not None
        return self.sched.run_until_done()

    def stop(self, why: str, end: str = KILLED) -> None:
        """End the job (``end``, unless it had ended already) because of ``why``; ``wait`` returns."""
        if self.sched is not None:
            self.sched.request_stop(why, end)

    def waiting_for(self) -> str:
        """What a stopping session waits for (said at a second Ctrl-C)."""
        sched = self.sched
        if sched is None:
            return "the job to start"
        if not sched.subscribed_once and not sched.done.is_set():
            return "the Mesos master to answer the subscription (at most --connect-timeout)"
        if not sched.done.is_set():
            with sched.cond:
                return sched.job.waiting_for()
        return "the framework's teardown by the Mesos master" + (" and the embedded master to stop" if self.local else "")

    def _given_up(self) -> None:
        """At the third stop signal (its processes killed): the live marker withdrawn, and the job's
        record kept as it stands, ended the way it was ending (no log locations: nothing is asked)."""
        live, self._live = self._live, None
        if live is not None:
            live.release()
        self._drop_token()  # no scheduler answers with it any more: nothing left beside the marker
        sched = self.sched
        if sched is None or not sched.framework_id or self._ending is not None:
            return  # nothing ran, or its end is being kept already
        from ..store.format import end_of
        from .signals import signal_name

        at = self.clock()
        rec = sched.store.final(sched.job, sched.framework_id,
                                end_of(at, sched.job.progress(), {}, self.api.address if self.api else None,
                                       self.master, job_end.whoami())).to_json()
        job = rec["job"]
        if job.get("phase") not in ENDED_PHASES:  # cut short while it stopped: the end it was heading for
            job["phase"] = job.get("ending") or KILLED
            signum = self.signals.signum if self.signals is not None else None
            job["cause"] = job.get("cause") or (f"stopped by {signal_name(signum)}" if signum else "stopped")
        (self.store or job_end.local_store(self.spec, self.settings.state_dir)).keep_end(rec)

    # ------------------------------------------------------------------ 4. the end
    def teardown(self, failover: bool) -> None:
        """Tear the framework down (Mesos kills anything left), or leave it to another scheduler
        (``failover``); once."""
        driver, self.driver = self.driver, None
        if driver is not None:
            from ..mesos.driver import stop_driver

            stop_driver(self.sched, driver, failover=failover)

    def keep_end(self, store: StateStore | None = None) -> None:
        """Keep the job's final record (``store``, else the state directory's) on a thread of its
        own: asking the agents where the logs are runs while the front-end prints its summary;
        ``close()`` (or ``ended()``) waits for it, before the embedded master takes the sandboxes."""
        sched = self.sched
        if sched is None or sched.result is None or not sched.framework_id or self._ending is not None:
            return  # a refused subscription had no framework: nothing to keep
        where = store or self.store or job_end.local_store(self.spec, self.settings.state_dir)
        api = self.api.address if self.api else None
        ask = getattr(sched.driver, "master", None)  # a zk:// master's leader, as the driver found it
        self._end_at = self.clock()
        self._ending = threading.Thread(
            target=job_end.record_end, args=(sched, where, api, self.master, self.console, self._end_at, ask),
            name="tfmesos-record-end", daemon=True)
        self._ending.start()

    def ended(self) -> float:
        """Wait for ``keep_end``'s record; returns when the job ended."""
        if self._ending is not None:
            self._ending.join(job_end.LOCATE_SECONDS + 1.0)
            return self._end_at
        return self.clock()

    def end_attempt(self) -> None:
        """Stop serving this attempt: the API withdrawn and stopped (a session may ``start`` again)."""
        if self._live is not None:
            self._live.stop_watching()
            self._live.announce(None)
        api, self.api = self.api, None
        if api is not None:
            api.stop()

    def _drop_token(self) -> None:
        kept, self._token_kept = self._token_kept, []
        for drop in kept:
            try:
                drop()
            except Exception as exc:  # noqa: BLE001 - a gone ZooKeeper or directory: nothing left to protect
                self.console.line(f"could not remove the job's API token: {type(exc).__name__}")

    def close(self) -> None:
        """Everything the session started, stopped: the framework torn down unless its kind
        leaves it to a successor (then the driver simply goes with this process, as after a crash),
        the API, the store, the master. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            if not self.kind.failover:
                self.teardown(failover=False)
            self.ended()
            self.end_attempt()
        finally:
            try:
                self._drop_token()  # before the store closes: it may be the token's ZooKeeper
                if self._live is not None:
                    self._live.release_zk()  # before the store closes too: its session holds the claim's node
                if self.store is not None:
                    self.store.close()
            finally:
                try:
                    if self.master_proc is not None:
                        if self.signals is not None:
                            self.signals.waiting_for = lambda: "the embedded master to stop its executors"
                        self.master_proc.stop()
                finally:
                    live, self._live = self._live, None
                    if live is not None:
                        live.release()  # last: the name is free once nothing of the run is left

