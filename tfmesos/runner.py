"""``tfmesos run``: start (or resume) one job on a Mesos master and see it to its end.

The imperative shell around the core: the embedded master when no --master is given, the
state store, the pymesos driver, the HTTP API, the console. Exit code 0 means the job
succeeded and nothing it started is still running.
"""
from __future__ import annotations

import dataclasses
import functools
import getpass
import logging
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, TextIO

from .api import ApiServer
from .core.job import Job, job_seed
from .live_jobs import refuse_duplicate, running_frameworks
from .mesos.operator import role_quota
from .mesos.taskinfo import ExecutorSettings
from .options import OptionsError
from .scheduler import JobScheduler, options_digest
from .spec import JobSpec
from .state_store import StateStore, open_store

log = logging.getLogger("tfmesos.runner")
EMBEDDED_PORTS_PER_AGENT = 100


@dataclass
class RunSettings:
    master: str | None = None  # None: start the embedded master
    zk: str = ""
    state_dir: str = ""
    api_port: int | None = None  # None: the options' service.api_port
    api_host: str = "127.0.0.1"
    agents: int = 2
    agent_cpus: float = 4.0
    agent_mem: float = 8192.0
    agent_disk: float = 20000.0
    gpus_per_agent: int = 0
    quiet: bool = False


class Console:
    """Progress lines with the time since start; the chief's output indented under them."""

    def __init__(self, out: TextIO, quiet: bool = False):
        self.out, self.quiet, self.t0 = out, quiet, time.monotonic()
        self._lock = threading.Lock()

    def line(self, text: str) -> None:
        with self._lock:
            self.out.write(f"[tfmesos {time.monotonic() - self.t0:6.1f}s] {text}\n")
            self.out.flush()

    def event(self, text: str) -> None:
        if not self.quiet:
            self.line(text)

    def output(self, task_id: str, lines: list[str]) -> None:
        parts = task_id.split(".")  # <service>.<role>.<index>.<seq>
        name = f"{parts[-3]}:{parts[-2]}" if len(parts) >= 4 else task_id
        with self._lock:
            for line in lines:
                self.out.write(f"  {name} | {line}\n")
            self.out.flush()


def local_fit_problems(spec: JobSpec, s: RunSettings) -> list[str]:
    """Tasks that no embedded agent could ever hold: rejected before anything starts."""
    problems = []
    for role in spec.roles:
        d = role.demand
        for field, need, have, flag in (
            ("cpus", d.cpus, s.agent_cpus, "--agent-cpus"),
            ("mem", d.mem, s.agent_mem, "--agent-mem"),
            ("disk", d.disk, s.agent_disk, "--agent-disk"),
            ("gpus", d.gpus, s.gpus_per_agent, "--gpus-per-agent"),
        ):
            if need > have + 1e-9:
                problems.append(
                    f"$.roles.{role.name}.{field}: {getattr(role.resources, field):g} (plus the executor's share) "
                    f"does not fit an embedded agent, which has {have:g} {field}: expected at most that, or raise {flag}"
                )
    return problems


def framework_info(spec: JobSpec, framework_id: str | None, webui_url: str) -> dict[str, Any]:
    svc = spec.service
    info: dict[str, Any] = {
        "user": svc.user or getpass.getuser(),
        "name": svc.name,
        "roles": [svc.role],
        # Offers name their role (allocation_info) and carry reservations in the refined form;
        # GPU_RESOURCES only for a job that wants GPUs, so CPU jobs never hold GPU agents.
        "capabilities": [{"type": c} for c in ("MULTI_ROLE", "RESERVATION_REFINEMENT")]
        + ([{"type": "GPU_RESOURCES"}] if spec.gpus_needed else [])
        + ([{"type": "REVOCABLE_RESOURCES"}] if svc.revocable else []),
        "failover_timeout": svc.failover_timeout,
        "checkpoint": True,
        "hostname": socket.gethostname(),
    }
    if webui_url:
        info["webui_url"] = webui_url
    if svc.principal:
        info["principal"] = svc.principal
    if framework_id:
        info["id"] = {"value": framework_id}
    return info


def _load_or_create(store: StateStore | None, spec: JobSpec, options: dict[str, Any], console: Console) -> tuple[Job, str | None]:
    saved = store.load() if store else None
    if not saved:
        return Job.new(spec, time.time(), seed=job_seed(spec.service.name)), None
    if saved.get("options_digest") != options_digest(options):
        raise OptionsError(
            [f"$.service.name: a job named {spec.service.name!r} is still recorded in {store.where} "  # type: ignore[union-attr]
             f"(framework {saved.get('framework_id')}) with other options: expected the same options to resume it, "
             "or another service name"]
        )
    job = Job.from_dict(spec, saved["job"], seed=job_seed(spec.service.name))
    console.event(f"resuming job {spec.service.name!r} as framework {saved['framework_id']} (state in {store.where})")  # type: ignore[union-attr]
    return job, saved["framework_id"]


def _under_marathon() -> bool:
    return bool(os.environ.get("MARATHON_APP_ID"))


def run_job(spec: JobSpec, options: dict[str, Any], settings: RunSettings, out: TextIO = sys.stdout) -> int:
    console = Console(out, settings.quiet)
    master_proc = None
    if settings.master is None:
        problems = local_fit_problems(spec, settings)
        if problems:
            raise OptionsError(problems)
        from .localmaster import LocalMaster

        from .localmaster.ports import free_port_block

        master_proc = LocalMaster(
            # A block of ports nobody uses now: other embedded masters may run on this host.
            first_port=free_port_block(settings.agents * EMBEDDED_PORTS_PER_AGENT),
            ports_per_agent=EMBEDDED_PORTS_PER_AGENT,
            agents=settings.agents,
            agent_cpus=settings.agent_cpus,
            agent_mem=settings.agent_mem,
            agent_disk=settings.agent_disk,
            gpus_per_agent=settings.gpus_per_agent,
        )
        master_proc.start()
        master = master_proc.address
        console.event(f"embedded Mesos master on {master} with {settings.agents} agent(s); sandboxes under {master_proc.work_dir}")
        if not spec.checkpoint_dir:
            # Every embedded agent shares this machine's disk: give the job a checkpoint directory
            # so that relaunched tasks resume; it goes away with the master's work directory.
            spec = dataclasses.replace(spec, checkpoint_dir=str(master_proc.work_dir / "checkpoints" / spec.service.name))
    else:
        master = settings.master

    # The embedded master dies with us, so a local run only persists state when asked to.
    persist = settings.master is not None or bool(settings.state_dir or settings.zk)
    store = open_store(settings.zk or spec.service.zk, settings.state_dir or spec.service.state_dir, spec.service.name) if persist else None
    try:
        code = _run(spec, options, settings, master, store, console, local=master_proc is not None)
        if code == _START_AFRESH and store is not None:
            console.event("Mesos no longer knows the recorded framework: starting the job afresh")
            store.clear()
            code = _run(spec, options, settings, master, store, console, local=master_proc is not None)
        return code
    finally:
        if store:
            store.close()
        if master_proc is not None:
            master_proc.stop()


_START_AFRESH = -1


def _run(spec: JobSpec, options: dict[str, Any], settings: RunSettings, master: str, store: StateStore | None,
         console: Console, local: bool) -> int:
    saved = store.load() if store else None
    if saved and saved.get("finished") and _under_marathon():
        # Marathon restarts apps that exit: a finished job stays finished, and we only report it.
        console.event(f"job {spec.service.name!r} already ended ({saved['job'].get('phase')}); serving its status")
        final = Job.from_dict(spec, saved["job"]).snapshot()
        return _serve_until_terminated(settings, spec, lambda: final, console)
    job, framework_id = _load_or_create(store, spec, options, console)
    if not local:
        refuse_duplicate(running_frameworks(master, spec.service.principal, os.environ.get("MESOS_SECRET", "")),
                         spec.service.name, framework_id, master)
    sched = JobScheduler(
        job, spec, options, ExecutorSettings(python=spec.python or sys.executable, framework_user=spec.service.user),
        store=store, framework_id=framework_id, on_output=console.output, on_event=console.event,
        quota_probe=None if local else functools.partial(
            role_quota, master, principal=spec.service.principal, secret=os.environ.get("MESOS_SECRET", "")),
    )
    stop_requested = threading.Event()

    def shutdown() -> None:
        stop_requested.set()
        sched.request_stop()

    port = spec.service.api_port if settings.api_port is None else settings.api_port
    api = ApiServer(sched.snapshot, lambda: sched.job._spec_message(), shutdown, settings.api_host, port)
    api.start()
    try:
        console.event(f"scheduler API on http://{api.address}/v1/status")
        from pymesos import MesosSchedulerDriver

        api_host, api_port = api.address.rsplit(":", 1)
        webui = f"http://{os.environ.get('HOST') or api_host}:{api_port}"  # HOST: the agent's name under Marathon
        secret = os.environ.get("MESOS_SECRET") or None
        driver = _driver_class(MesosSchedulerDriver)(
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
        # SIGTERM: locally, stop the job; under Marathon (a restart or an upgrade), leave the job to
        # the next scheduler instance, which re-subscribes with the same framework id.
        previous_term = signal.signal(signal.SIGTERM, lambda *_: shutdown() if local else _failover_exit())
        driver.start()
        try:
            result = sched.run_until_done(stop_requested)
        except (RuntimeError, OSError, ValueError) as exc:
            # pymesos re-raises its IO thread's error here (e.g. HTTP 401 from the master). The
            # driver is gone; tasks already launched keep running until failover_timeout.
            hint = " (check service.principal and the MESOS_SECRET variable)" if "401" in str(exc) else ""
            console.line(f"lost the Mesos master at {master}: {exc}{hint}")
            if sched.job.launch_seq:
                console.line("the job's tasks keep running; start the same command again to resume it"
                             + ("" if store else " (no state was persisted: tasks end at failover_timeout)"))
            return 1
        except KeyboardInterrupt:
            console.event("interrupted: killing the job's tasks (Ctrl-C again to leave at once)")
            shutdown()
            result = sched.run_until_done(stop_requested)
        finally:
            signal.signal(signal.SIGTERM, previous_term)
        if framework_id and "Framework has been removed" in result.cause:
            driver.stop(failover=True)
            driver.join()
            return _START_AFRESH
        # The job is over: tear the framework down (Mesos kills anything left) and forget it.
        driver.stop(failover=False)
        driver.join()
        _summary(console, sched, result.succeeded, result.cause)
        code = 0 if result.succeeded else 1
        if store and _under_marathon():
            store.save({"finished": True, "options_digest": options_digest(options), "job": sched.job.to_dict()})
            final = sched.snapshot()
            api.stop()
            api = None
            return _serve_until_terminated(settings, spec, lambda: final, console, code)
        if store:
            store.clear()
        return code
    finally:
        if api:
            api.stop()


def _driver_class(base: type) -> type:
    """pymesos adds GPU_RESOURCES to every framework on Mesos >= 1.0; keep our own choice."""

    class Driver(base):  # type: ignore[misc, valid-type]
        @property
        def framework(self) -> dict[str, Any]:
            info = super().framework
            wanted = self._framework.get("capabilities", [])
            if not any(c.get("type") == "GPU_RESOURCES" for c in wanted):
                kept = [c for c in info.get("capabilities", []) if c.get("type") != "GPU_RESOURCES"]
                info["capabilities"] = kept
            return info

    return Driver


def _serve_until_terminated(settings: RunSettings, spec: JobSpec, snapshot: Any, console: Console, code: int = 0) -> int:
    """Under Marathon: keep answering /v1/health and /v1/status until the app is removed."""
    stop = threading.Event()
    port = spec.service.api_port if settings.api_port is None else settings.api_port
    api = ApiServer(snapshot, lambda: None, stop.set, settings.api_host, port)
    api.start()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        console.event(f"job over; status stays on http://{api.address}/v1/status until the app is removed")
        stop.wait()
    finally:
        signal.signal(signal.SIGTERM, previous)
        api.stop()
    return code


def _failover_exit() -> None:
    """SIGTERM on a real cluster (Marathon restarting us): leave the job to the next scheduler."""
    raise SystemExit(143)


def _summary(console: Console, sched: JobScheduler, succeeded: bool, cause: str) -> None:
    snap = sched.snapshot()
    console.line(f"job {snap['name']} {'SUCCEEDED' if succeeded else 'FAILED'}: {cause}")
    for t in snap["tasks"]:
        exit_part = "" if t["exit_code"] is None else f" exit {t['exit_code']}"
        name = f"{t['role']}:{t['index']}"
        console.line(f"  {name:<12} {t['endpoint'] or '-':<21} {t['state']:<14} restarts {t['restarts']}{exit_part}")
    if not succeeded:
        for rec in sched.job.tasks.values():
            if rec.log_tail and rec.state not in ("TASK_FINISHED", "TASK_KILLED"):
                console.line(f"last lines of {rec.key} ({rec.task_id}):")
                for line in rec.log_tail.splitlines()[-10:]:
                    console.line(f"  | {line}")
