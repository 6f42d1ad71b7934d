"""``tfmesos.cluster()``: TensorFlow servers on Mesos for the life of a ``with`` block.

The caller (a notebook, a driver script) drives the servers itself: as the coordinator of a
ParameterServerStrategy (``c.resolver()``), or as an in-graph TF1 client (``c.targets``). The
servers are an ordinary tfmesos job, run by the same core and scheduler as ``tfmesos run``,
with two differences: it never ends on its own (success policy ``never``), and the caller is a
member of its ClusterSpec without being a Mesos task (``JobSpec.external``).

    with tfmesos.cluster({"ps": 1, "worker": 2}) as c:
        strategy = tf.distribute.experimental.ParameterServerStrategy(c.resolver())

Leaving the block, by any path, kills every task and tears the framework down. SIGINT,
SIGTERM and SIGHUP do that too, print the summary and exit 128 + the signal (see ``signals``).
While it runs, its API and status page listen on 127.0.0.1 (a free port), announced in the state
directory as ``tfmesos run`` announces its own: ``tfmesos status|logs NAME`` find it. Its end
is then kept as ``tfmesos run``'s is (``tfmesos jobs``, ``tfmesos status NAME``), in
``service.state_dir`` (default ~/.tfmesos/state).
"""
from __future__ import annotations

import atexit
import dataclasses
import itertools
import os
import socket
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TextIO

from ..options.load import OptionsError, deep_merge
from ..core.spec import JobSpec, TaskKey
from ..core.status import StatusSnapshot
from .job_checks import CheckedJob, check_job

DEFAULT_START_TIMEOUT = 300.0
# A real master removes the framework (and kills its tasks) this long after the caller's
# connection is gone, e.g. when the process was killed with SIGKILL.
DEFAULT_FAILOVER_TIMEOUT = 30.0
_names = itertools.count()


class ClusterError(RuntimeError):
    """The cluster could not be started (or failed); nothing it started is left running."""


@dataclasses.dataclass(frozen=True)
class ClusterSettings:
    """How to reach Mesos and how long to wait; the servers themselves are in the JobSpec."""
    master: str | None = None  # None: MESOS_MASTER, else an embedded master
    host: str = ""  # the caller's address as the servers reach it; empty: worked out
    start_timeout: float = DEFAULT_START_TIMEOUT
    connect_timeout: float = 30.0  # reaching and subscribing to the master
    wait_serving: bool = True  # wait until every task accepts connections on its port
    quiet: bool = True
    agents: int = 2
    agent_cpus: float = 4.0
    agent_mem: float = 8192.0
    gpus_per_agent: int = 0


def free_port(host: str) -> int:
    """A port free now on ``host`` (TensorFlow binds it later; a race we accept)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def reachable_host(master: str | None) -> str:
    """This machine's address on the route to the master (127.0.0.1 for the embedded one)."""
    if not master:
        return "127.0.0.1"
    # Every form --master takes: HOST[:PORT], http://HOST:PORT, zk:// or zoo://[AUTH@]HOST:PORT[,...]/PATH.
    target = master.split("://", 1)[-1].split("/", 1)[0].split(",")[0].rsplit("@", 1)[-1]
    host = target.rsplit(":", 1)[0] if ":" in target else target
    if host in ("127.0.0.1", "localhost"):
        return "127.0.0.1"
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((host, 9))  # no packet is sent: this only picks the route
            return s.getsockname()[0]
    except OSError:
        return socket.gethostbyname(socket.gethostname())


def roles_options(roles: Mapping[str, Any]) -> dict[str, Any]:
    """``{"ps": 1, "worker": {"count": 2, "cpus": 0.5}}`` -> the options' ``roles`` section.

    Roles are TensorFlow servers that relaunch on failure unless told otherwise.
    """
    out: dict[str, Any] = {}
    for name, value in roles.items():
        if isinstance(value, bool) or not isinstance(value, (int, dict)):
            raise OptionsError([f"$.roles.{name}: {value!r} is invalid: expected a task count or an object of role options"])
        role = {"count": value} if isinstance(value, int) else dict(value)
        role.setdefault("server", not role.get("command"))
        role.setdefault("restart_policy", "OnFailure" if role["server"] else "Never")
        out[name] = role
    return out


def cluster_job(options: Mapping[str, Any], external: Mapping[TaskKey, str], master: str | None) -> CheckedJob:
    """A job of servers that runs until stopped (success "never": the caller trains), checked as
    ``tfmesos run`` checks a file, every home in one round (``job_checks.py``), with ``external``
    in its cluster. Raises ``OptionsError``; the warnings are the profile's, then the place's."""
    job = check_job(dict(options), os.environ, embedded=master is None, external=tuple(external.items()),
                    success="never")
    return dataclasses.replace(job, spec=dataclasses.replace(job.spec, streamed=()))


class Cluster(Mapping[str, str]):
    """The running servers. Also a mapping over ``targets``, as douban/tfmesos yielded it."""

    def __init__(self, spec: JobSpec, options: dict[str, Any], settings: ClusterSettings,
                 on_event: Callable[[str], None] | None = None, out: TextIO | None = None):
        from ..scheduler.console import Console

        self.spec, self.options, self.settings = spec, options, settings
        self.events: list[str] = []
        self._on_event = on_event
        self._console = Console(out or sys.stdout, settings.quiet)
        self._session: Any = None  # the running job (tfmesos.scheduler.session.Session)
        self._sched: Any = None  # its JobShell, once started
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._closed = threading.Event()
        self._close_lock = threading.Lock()
        self._signals: Any = None  # StopSignals while the block runs (main thread only)

    # ------------------------------------------------------------------ what the caller uses
    @property
    def targets(self) -> dict[str, str]:
        """``{"/job:ps/task:0": "grpc://host:port", ...}`` for every task launched on Mesos."""
        snap = self._sched.snapshot()
        return {TaskKey(t.role, t.index).name: f"grpc://{t.endpoint}" for t in snap.tasks if t.endpoint}

    @property
    def cluster_spec(self) -> dict[str, list[str]]:
        """The whole cluster (the caller's own entry included), for ``tf.train.ClusterSpec``."""
        with self._sched.cond:
            cluster = self._sched.job.cluster()
        if cluster is None:
            raise ClusterError("the cluster is not (or no longer) complete")
        return cluster

    @property
    def coordinator_address(self) -> str | None:
        return next((addr for key, addr in self.spec.external if key.role == "chief"), None)

    def resolver(self) -> Any:
        """A ClusterResolver in which this process is the chief (coordinator)."""
        if self.coordinator_address is None:
            raise ClusterError("this cluster was opened with coordinator=False: the calling process has no chief address")
        import tensorflow as tf

        return tf.distribute.cluster_resolver.SimpleClusterResolver(
            tf.train.ClusterSpec(self.cluster_spec), task_type="chief", task_id=0, rpc_layer="grpc")

    def snapshot(self) -> StatusSnapshot:
        """The job's status, as GET /v1/status serves it (``to_json()``)."""
        return self._sched.snapshot()

    def finished(self) -> bool:
        """True once the cluster has ended (a task failed for good, or it was closed)."""
        return self._sched is not None and self._sched.done.is_set()

    def wait_finished(self, timeout: float | None = None) -> bool:
        """Block until the cluster has ended (or ``timeout``); True if it has."""
        return self._sched.done.wait(timeout)

    @property
    def cause(self) -> str:
        """Why the cluster ended ("" while it runs)."""
        return self._sched.result.cause if self._sched.result else ""

    def __getitem__(self, key: str) -> str:
        return self.targets[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.targets)

    def __len__(self) -> int:
        return len(self.targets)

    # ------------------------------------------------------------------ life cycle
    def _event(self, text: str) -> None:
        self.events.append(text)
        self._console.event(text)
        if self._on_event is not None:
            try:
                self._on_event(text)
            except Exception:  # noqa: BLE001 - the caller's callback must not stop the scheduler
                pass

    def start(self) -> "Cluster":
        """The servers on Mesos, each RUNNING (and serving, with ``wait_serving``), or an error
        with nothing left running. The session is ``tfmesos run``'s, but: no state kept while it
        runs, the embedded master a child process that dies with this one (from the main thread),
        no restart through the API, the framework torn down whenever this process leaves."""
        from ..scheduler.run_settings import RunSettings, SessionKind
        from ..scheduler.session import Session

        s = self.settings
        run = RunSettings(master=s.master or os.environ.get("MESOS_MASTER") or None, api_port=0, api_host="127.0.0.1",
                          agents=s.agents, agent_cpus=s.agent_cpus, agent_mem=s.agent_mem,
                          gpus_per_agent=s.gpus_per_agent, quiet=s.quiet, connect_timeout=s.connect_timeout)
        # Off the main thread a child would get SIGTERM when this thread ends: keep it in-process.
        child = threading.current_thread() is threading.main_thread()
        kind = SessionKind(persist=False, child_master=child, restart=False, failover=False, remote_checks=False,
                           progress=False)
        try:
            session = self._session = Session(self.spec, self.options, run, self._console, kind=kind,
                                              on_event=self._event)
            session.open()
            self.spec = session.spec  # with the embedded master's checkpoint directory
            if self._signals is not None and session.master_proc is not None:
                self._signals.scratch.append(str(session.master_proc.work_dir))
            job, _ = session.job_to_run()
            self._sched = session.start(job)
            session.subscribe()
            self._thread = threading.Thread(target=session.wait, name="tfmesos-cluster", daemon=True)
            self._thread.start()
            self._wait_ready(time.monotonic() + s.start_timeout)
        except BaseException:
            self.close()
            raise
        return self

    def _wait_ready(self, deadline: float) -> None:
        """Every task RUNNING (a command role's task may also have finished already: nothing waits
        for it to run), then every built-in server accepting connections on its port. A command's
        port is its own business, as in douban's cluster(): it may never open one."""
        sched = self._sched
        spec = sched.job.spec
        commands = {r.name for r in spec.roles if r.command is not None}

        def started(task: Any) -> bool:
            return task.state == "TASK_RUNNING" or (task.state == "TASK_FINISHED" and task.key.role in commands)

        with sched.cond:
            while not sched.done.is_set() and not all(started(r) for r in sched.job.tasks.values()):
                if time.monotonic() >= deadline:
                    raise ClusterError(f"tasks not all RUNNING after {self.settings.start_timeout:g}s: "
                                       + ", ".join(f"{t.name} {t.state}" for t in sched.job.snapshot().tasks))
                sched.cond.wait(timeout=min(1.0, deadline - time.monotonic()))
        if sched.done.is_set():
            raise ClusterError(f"the cluster ended while starting: {sched.result.cause if sched.result else 'stopped'}")
        if not self.settings.wait_serving:
            return
        waiting = {TaskKey(t.role, t.index).name: t.endpoint for t in sched.snapshot().tasks
                   if t.endpoint and t.role not in commands}
        while waiting:
            for name, addr in list(waiting.items()):
                host, port = addr.rsplit(":", 1)
                try:
                    socket.create_connection((host, int(port)), timeout=0.5).close()
                    del waiting[name]
                except OSError:
                    pass
            if not waiting:
                break
            if sched.done.is_set():
                raise ClusterError(f"the cluster ended while starting: {sched.result.cause if sched.result else 'stopped'}")
            if time.monotonic() >= deadline:
                raise ClusterError(f"not serving after {self.settings.start_timeout:g}s: {', '.join(sorted(waiting))}")
            self._stop.wait(0.2)  # poll interval for servers that are still importing TensorFlow
        self._event("every server is serving: " + ", ".join(f"{k} {v}" for k, v in sorted(self.targets.items())))

    def close(self, cause: str = "cluster closed", end: str = "CLOSED") -> None:
        """Kill every task, tear the framework down, stop the embedded master. Idempotent.
        The cluster ends ``end`` (CLOSED: the block left normally; KILLED: stopped by a signal)
        with ``cause``, unless a task had already ended it."""
        # In short waits: a close already running on the first Ctrl-C's thread
        # holds the lock for its kill grace, and a second Ctrl-C that the kernel gave to another
        # thread is answered only once the main thread runs bytecode again.
        while not self._close_lock.acquire(timeout=0.2):
            pass
        try:
            self._close_held(cause, end)
        finally:
            self._close_lock.release()

    def _close_held(self, cause: str, end: str) -> None:
        if self._closed.is_set():
            return
        session = self._session
        try:
            self._stop.set()  # a start still waiting for servers gives up
            if session is not None:
                session.stop(cause, end)
                if self._thread is not None:
                    # In short joins, as the lock above: a second Ctrl-C is heard meanwhile.
                    while self._thread.is_alive():
                        self._thread.join(0.2)
                session.teardown(failover=False)  # TEARDOWN: Mesos kills anything left
                if self._sched is not None and self._sched.result is not None:
                    # Its end is kept (before the embedded master goes with its sandboxes) as the summary prints.
                    session.keep_end()
                    if self._signals is not None and self._signals.signum is not None:
                        from ..scheduler.runner import print_summary

                        print_summary(self._console, self._sched, self._sched.result.end, self._sched.result.cause)
        finally:
            if session is not None:
                session.close()
            self._closed.set()

    def waiting_for(self) -> str:
        """What closing waits for (said at a second Ctrl-C)."""
        return self._session.waiting_for() if self._session is not None else "the cluster to start"

    # ------------------------------------------------------------------ signals
    def install_handlers(self) -> None:
        """SIGINT/SIGTERM/SIGHUP: close on another thread as soon as Python runs the handler (in
        the main thread, between two bytecodes: a long C call delays it), print the summary, and unwind the main thread with SystemExit(128 +
        signal) so that the with block's exit runs (and waits for the close). Main thread only."""
        atexit.register(self.close)  # from any thread: the interpreter's exit closes it
        if threading.current_thread() is not threading.main_thread():
            return
        from ..scheduler.signals import StopSignals

        self._signals = StopSignals(self.waiting_for, self._console.line, unwind=True).install()
        self._signals.arm(lambda signum: self.close(self._signals.cause, "KILLED"))

    def restore_handlers(self) -> None:
        if self._signals is not None:
            self._signals.restore()
        atexit.unregister(self.close)


def open_cluster(spec: JobSpec, options: dict[str, Any], settings: ClusterSettings,
                 on_event: Callable[[str], None] | None = None) -> Cluster:
    c = Cluster(spec, options, settings, on_event)
    c.install_handlers()
    try:
        return c.start()
    except BaseException:
        c.restore_handlers()
        raise


class _ClusterContext:
    """What ``tfmesos.cluster(...)`` returns: a context manager around a started Cluster."""

    def __init__(self, opener: Callable[[], Cluster]):
        self._opener = opener
        self.cluster: Cluster | None = None

    def __enter__(self) -> Cluster:
        self.cluster = self._opener()
        return self.cluster

    def __exit__(self, exc_type: object, *exc: object) -> None:
        assert self.cluster is not None
        signals = self.cluster._signals
        if signals is not None:
            # A first Ctrl-C from here on still stops the cluster (on a thread), but does not unwind
            # this close halfway (no teardown, no kept record, no summary): it exits once done.
            signals.unwind = False
        try:
            self.cluster.close()
        finally:
            self.cluster.restore_handlers()
        if signals is not None and signals.signum is not None and exc_type is None:
            raise SystemExit(signals.exit_code)


def cluster_document(roles: Any, name: str | None, options: Mapping[str, Any] | None, volumes: Any,
                     douban: dict[str, Any]) -> tuple[dict[str, Any], dict[TaskKey, str], bool]:
    """``cluster()``'s arguments as an options document: (document, external tasks, whether the
    roles came in douban's jobs_def shape)."""
    from . import douban as dbn

    douban = dict(douban)
    if roles is None and "jobs" in douban:  # douban's cluster(jobs, **kw), called with jobs=...
        roles = douban.pop("jobs")
    is_jobs_def = dbn.is_jobs_def(roles)
    allowed = set(dbn.EXTRAS) if is_jobs_def else {"local_task", "extra_config", "role", "env"}
    if set(douban) - allowed:
        raise TypeError(f"cluster() got unexpected keyword argument(s): {', '.join(sorted(set(douban) - allowed))}")
    if is_jobs_def:
        doc, external = dbn.jobs_def_options(roles, name=name, volumes=volumes, **douban)
    else:
        doc = {"roles": roles_options(roles or {})}
        if name:
            doc["service"] = {"name": name}
        if volumes:
            doc["job"] = {"volumes": dbn.volume_list(volumes)}
        doc, external = dbn.apply_douban_extras(doc, **douban) if douban else (doc, {})
    defaults: dict[str, Any] = {"service": {"name": f"cluster-{os.getpid()}-{next(_names)}",
                                            "failover_timeout": DEFAULT_FAILOVER_TIMEOUT}}
    if is_jobs_def:
        defaults["job"] = {"workdir": os.getcwd()}  # douban ran every cmd in the caller's directory
    return deep_merge(defaults, deep_merge(dict(options or {}), doc)), external, is_jobs_def


def cluster(
    roles: Any = None,
    /,
    *,
    master: str | None = None,
    name: str | None = None,
    options: Mapping[str, Any] | None = None,
    coordinator: bool | None = None,
    host: str = "",
    on_event: Callable[[str], None] | None = None,
    quiet: bool | None = None,
    start_timeout: float = DEFAULT_START_TIMEOUT,
    connect_timeout: float = 30.0,
    agents: int = 2,
    agent_cpus: float = 4.0,
    agent_mem: float = 8192.0,
    gpus_per_agent: int = 0,
    volumes: Mapping[str, str] | list[str] | None = None,
    **douban: Any,
) -> _ClusterContext:
    """TensorFlow servers on Mesos for the life of a ``with`` block.

    ``roles``: ``{"ps": 1, "worker": {"count": 2, "cpus": 0.5, "mem": 1024}}`` (each value a
    count or the role's options, as ``roles.<role>`` in an options file), or douban/tfmesos'
    ``jobs_def`` list of ``{"name", "num", "cpus", "mem", "gpus", "cmd"}``. ``options``: any
    other part of an options document (``service``, ``job``, ``policies``). ``master``:
    ``HOST:PORT`` or ``zk://...``; default ``MESOS_MASTER``, else an embedded master.
    ``coordinator`` (default True, False for a jobs_def): put this process in the ClusterSpec
    as ``chief`` so that ``resolver()`` works. ``on_event`` gets every event line (also in
    ``events``). douban's ``jobs=``, ``local_task``, ``extra_config``, ``role``, ``containerizer_type``,
    ``force_pull_image``, ``env``, ``protocol`` and ``forward_addresses`` are accepted as well (see
    tfmesos.client.douban); a jobs_def's commands run in the caller's directory, as douban's did.
    """
    doc, external, is_jobs_def = cluster_document(roles, name, options, volumes, douban)
    coordinator = (not is_jobs_def) if coordinator is None else bool(coordinator)
    quiet = (not is_jobs_def) if quiet is None else quiet
    master = master or os.environ.get("MESOS_MASTER") or None
    host = host or reachable_host(master)
    if coordinator:
        external = {**external, TaskKey("chief", 0): f"{host}:{free_port(host)}"}
    job = cluster_job(doc, external, master)
    spec, resolved = job.spec, job.options
    for warning in job.warnings:  # what `tfmesos run` prints as "tfmesos: warning:"
        warnings.warn(f"tfmesos.cluster(): {warning}", UserWarning, stacklevel=2)
    settings = ClusterSettings(master=master, host=host, start_timeout=start_timeout, connect_timeout=connect_timeout,
                               quiet=quiet, agents=agents,
                               agent_cpus=agent_cpus, agent_mem=agent_mem, gpus_per_agent=gpus_per_agent)
    return _ClusterContext(lambda: open_cluster(spec, resolved, settings, on_event))
