"""Checks against the place a job will run, made before anything starts, for what would
otherwise fail late or silently: the third home of option checks (the document's are the
schema's, the job's as TensorFlow sees it the profile's: docs/developers/architecture.md).

``option_problems`` is pure (the spec only): what Mesos would refuse later (a task id longer than
it allows, a failover_timeout it cannot hold) and options that would be silently overridden or
ignored. ``environment_problems`` looks at this process' environment and the file system.
``local_fit_problems`` and ``oversold_warnings``: the job against the embedded cluster and the
machine under it. Each problem names the option and what was expected, like the schema's own
messages.
"""
from __future__ import annotations

import getpass
import os
import re
import sys
import tempfile
from typing import Any, Mapping

from ..api.token import api_token
from ..errors import UsageError, cut
from ..store.state_store import STORE_NODES, file_name, zk_auth
from ..core.secrets import references, secret_problems
from ..core.placement.fit import Need, left_over_when_idle
from ..core.spec import JobSpec, Resources, RestartPolicy
from ..core.tensorflow.profile import TF_ROLES
from .run_settings import EMBEDDED, RunSettings

DEFAULT_STATE_DIR = "~/.tfmesos/state"
# Kernel file systems: nothing a task writes there is kept, wherever it runs.
PSEUDO_FILESYSTEMS = ("/proc", "/sys", "/dev")
MESOS_ID_MAX = 255  # Mesos refuses longer task and executor ids (NAME_MAX: they name sandbox dirs)
LAUNCH_SEQ_DIGITS = 10  # room for the launch counter at the end of every task id
FAILOVER_TIMEOUT_MAX = 9_223_372_036.0  # Mesos keeps it as int64 nanoseconds
MAX_TASKS = 100_000  # a job far beyond what a cluster runs: a typo (a count of 10^11) said at once
FILE_NAME_MAX = 255  # NAME_MAX: DirStore names a job's files after it ('/' as '__')
_PLACEHOLDER_LIKE = re.compile(r"(?<!\$)\{([a-z][a-z0-9]*_[a-z0-9_]+)\}")
RESERVED_ENV = re.compile(r"^(TF_CONFIG|TFMESOS_[A-Z0-9_]*)$")
# What tfmesos.core.tensorflow.clusterspec.substitute_placeholders fills in.
PLACEHOLDERS = ("job_name", "task_index", *(f"{role}_hosts" for role in TF_ROLES))


def _line_breaks(spec: JobSpec) -> list[str]:
    """Fields of one line that hold a line break (JSON Schema's '$' lets one end a value): a task
    id or a path with one fails late (Mesos, the shell), and the DC/OS package passes arrays as
    lines, so an item with one arrives as two. (An env value may hold lines: a key, say.)"""
    single = [("$.service.name", spec.service.name), ("$.service.zk", spec.service.zk),
              ("$.job.workdir", spec.workdir), ("$.job.checkpoint_dir", spec.checkpoint_dir)]
    single += [(f"$.job.uris[{i}]", uri) for i, uri in enumerate(spec.uris)]
    single += [(f"$.job.volumes[{i}]", f"{v.host_path}:{v.container_path}") for i, v in enumerate(spec.volumes)]
    return [f"{where}: holds a line break: expected one line" for where, text in single
            if text and any(c in text for c in "\n\r")]


def _env_sources(spec: JobSpec) -> list[tuple[str, tuple[tuple[str, str], ...]]]:
    return [("$.job.env", spec.env)] + [(f"$.roles.{r.name}.env", r.env) for r in spec.roles]


def option_problems(spec: JobSpec, options: dict[str, Any] | None = None) -> list[str]:
    problems: list[str] = []
    name = spec.service.name.replace("/", "_")
    longest = max((len(f"{name}.{r.name}.{r.count - 1}.") for r in spec.roles), default=0) + LAUNCH_SEQ_DIGITS
    if longest > MESOS_ID_MAX:
        room = MESOS_ID_MAX - (longest - len(name))
        problems.append(f"$.service.name: {len(spec.service.name)} characters make task ids of {longest}: "
                        f"expected at most {room} characters (Mesos refuses ids longer than {MESOS_ID_MAX})")
    reserved = sorted(STORE_NODES & set(spec.service.name.split("/")))
    if reserved:
        problems.append(f"$.service.name: {cut(spec.service.name)!r} has a segment named {reserved[0]!r}, which the "
                        "state store names its own nodes: expected other segment names (not "
                        + ", ".join(sorted(STORE_NODES)) + ")")
    longest = len(file_name(spec.service.name)) + len(".journal")  # DirStore's longest file name
    if longest > FILE_NAME_MAX:
        problems.append(f"$.service.name: {len(spec.service.name)} characters make the state directory's file names "
                        f"{longest} long: expected at most {FILE_NAME_MAX - (longest - len(spec.service.name))} "
                        f"characters (file systems take {FILE_NAME_MAX})")
    if spec.service.failover_timeout > FAILOVER_TIMEOUT_MAX:
        problems.append(f"$.service.failover_timeout: {spec.service.failover_timeout:g} is invalid: "
                        f"expected a number <= {FAILOVER_TIMEOUT_MAX:.0f} (what Mesos can hold)")
    for where, pairs in _env_sources(spec):
        seen: set[str] = set()
        for key, _ in pairs:
            if RESERVED_ENV.match(key):
                problems.append(f"{where}: {key} is set by tfmesos for every task (the ClusterSpec): "
                                "expected another variable name")
            if key in seen:  # the file's duplicate keys are refused too; here the last one won
                problems.append(f"{where}: {key} is given twice: expected each variable once")
            seen.add(key)
    given = {key: where for where, pairs in _env_sources(spec) for key, _ in pairs}
    problems += secret_problems(spec.secrets, given, RESERVED_ENV.match)
    problems += _line_breaks(spec)
    tasks = sum(r.count for r in spec.roles)
    if tasks > MAX_TASKS:
        problems.append(f"$.roles: {tasks} tasks: expected at most {MAX_TASKS} in one job")
    for key in spec.success_keys:
        role = spec.role(key.role)
        if role is not None and role.count and spec.profile.is_server(role) and role.command is None:
            problems.append(f"$.roles.{key.role}.server: {key} decides the job's success ($.policies.success) but "
                            "runs the built-in server, which never exits: expected a command for it (\"server\": false)")
    said: set[tuple[str, str]] = set()
    for role in spec.roles:
        if role.command:
            # Where the command was written: the role's own, or $.job.command (every role's that has none).
            own = ((options or {}).get("roles") or {}).get(role.name, {}).get("command")
            where = "$.job.command" if options is not None and not own else f"$.roles.{role.name}.command"
            for unknown in sorted(set(_PLACEHOLDER_LIKE.findall(role.command)) - set(PLACEHOLDERS)):
                if (where, unknown) not in said:
                    said.add((where, unknown))
                    problems.append(f"{where}: placeholder {{{unknown}}} does not exist: expected one of "
                                    + ", ".join(f"{{{p}}}" for p in PLACEHOLDERS) + " (${NAME} for a shell variable)")
        if role.restart_policy == RestartPolicy.ALWAYS and not spec.profile.is_server(role):
            problems.append(f"$.roles.{role.name}.restart_policy: \"Always\" restarts a {role.name} after every "
                            "success too, so the job never ends: expected it only on servers (ps, or \"server\": true)")
    return problems


def place_problems(spec: JobSpec, options: dict[str, Any] | None, environ: Mapping[str, str], embedded: bool,
                   create: bool = True) -> tuple[list[str], list[str]]:
    """(problems, warnings) of every check against the place before a front-end starts anything
    (``tfmesos run``, ``tfmesos.cluster()``, ``tfrun``): what Mesos and the state store would
    refuse, then this process' environment. What the embedded cluster could never hold is asked
    by the session (``local_fit_problems``), and by a dry run, once the cluster's size is known."""
    problems = option_problems(spec, options)
    more, warnings = environment_problems(spec, environ, embedded, create)
    return problems + more, warnings


def environment_problems(spec: JobSpec, environ: Mapping[str, str], embedded: bool,
                         create: bool = True) -> tuple[list[str], list[str]]:
    """(problems, warnings) from this process' environment and what the scheduler can see.
    ``create``: an embedded run makes its checkpoint directory now (not a dry run)."""
    problems: list[str] = []
    warnings: list[str] = []
    if environ.get("MESOS_SECRET") and not spec.service.principal:
        problems.append("MESOS_SECRET is set but $.service.principal is empty: the secret would be ignored; "
                        "expected service.principal (or unset MESOS_SECRET)")
    if not environ.get("MESOS_SECRET", "").isascii():
        problems.append("MESOS_SECRET holds a character that is not ASCII, which the HTTP basic authentication "
                        "to the master (pymesos) cannot send: expected an ASCII secret")
    for check in (api_token, zk_auth):
        try:
            check(environ)
        except UsageError as exc:
            problems.append(exc.line())
    from .secret_values import value_problems

    problems += value_problems(spec.secrets, environ)
    if embedded and (by_reference := references(spec.secrets)):
        use = by_reference[0]
        problems.append(f"{use.where} {use.target}={use.source}: a secret store's name, which the embedded master's "
                        "agents cannot resolve (they have Mesos' default secret resolver, which resolves no "
                        "references): expected env:VAR or file:PATH here, or a cluster whose agents resolve it (DC/OS)")
    if spec.service.principal and not environ.get("MESOS_SECRET") and not embedded:
        warnings.append(f"$.service.principal {spec.service.principal!r} without MESOS_SECRET: the master "
                        "will refuse the framework if it authenticates frameworks")
    keras = _keras_warning(spec) if embedded and not spec.image else None
    if keras:
        warnings.append(keras)
    ckpt = spec.checkpoint_dir
    if ckpt and os.path.isabs(ckpt):
        problem = _checkpoint_dir_problem(os.path.normpath(ckpt), embedded and create)
        if problem:
            # Locally the tasks run here, as us; on a cluster the agents may see another disk.
            (problems if embedded or problem.startswith(("is under", "is a file")) else warnings).append(
                f"$.job.checkpoint_dir: {ckpt!r} {problem}")
    return problems, warnings


def _keras_warning(spec: JobSpec) -> str | None:
    """Tasks of the embedded master run on this interpreter (job.python empty): a Keras that
    cannot run model.fit under the strategies is said now, not after the first fit fails."""
    if spec.python not in ("", sys.executable):
        return None
    from ..task.keras_check import problem_here

    for role in spec.roles:
        if role.command is not None:
            line = problem_here(dict(spec.env) | dict(role.env))
            if line:
                return f"$.job.legacy_keras: {line}"
    return None


def _checkpoint_dir_problem(ckpt: str, create: bool) -> str:
    """Why the tasks could not keep checkpoints in ``ckpt``, or "". ``create``: the tasks run on
    this machine (embedded master), so make the directory now and write a file in it, as they will
    (root may write where the permission bits say no, and /proc's bits say yes)."""
    if any(ckpt == top or ckpt.startswith(top + "/") for top in PSEUDO_FILESYSTEMS):
        return "is under a kernel file system, where nothing is kept: expected a directory on a disk"
    if os.path.exists(ckpt) and not os.path.isdir(ckpt):
        return "is a file: expected a directory"
    if create:
        try:
            os.makedirs(ckpt, exist_ok=True)
            with tempfile.TemporaryFile(dir=ckpt):
                pass
        except OSError as exc:
            return f"cannot be created or written here: {exc.strerror}: expected a directory the tasks can write to"
        return ""
    parent = ckpt
    while not os.path.exists(parent) and os.path.dirname(parent) != parent:
        parent = os.path.dirname(parent)
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"is not writable here ({parent!r} is not): expected a directory the tasks can write to"
    return ""


def state_zk(spec: JobSpec, state_dir: str, zk: str) -> str:
    """The ZooKeeper a run keeps its state in, or "": --zk, else the options' service.zk, unless
    --state-dir names a directory (a flag given on the command line wins over the file)."""
    return zk or ("" if state_dir else spec.service.zk)


def state_dir_of(spec: JobSpec, master: str | None, state_dir: str, zk: str) -> tuple[str, str] | None:
    """(directory, flag naming it) of the state directory a run keeps its state in; None where the
    state goes to ZooKeeper or an embedded run keeps none (its master dies with it)."""
    if (master is None and not (state_dir or zk)) or state_zk(spec, state_dir, zk):
        return None
    flag = "--state-dir" if state_dir else "$.service.state_dir"
    return os.path.expanduser(state_dir or spec.service.state_dir or DEFAULT_STATE_DIR), flag


def check_state_dir(directory: str, flag: str) -> None:
    """The state directory exists (made if missing) and is writable, else ``UsageError``. Local:
    made before any wait for the master or ZooKeeper, so a wrong directory is said at once."""
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise UsageError(flag, f"{directory!r} is a file, not a directory", "expected a directory for the scheduler's state")
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise UsageError(flag, f"cannot create {directory!r}: {exc.strerror}", "expected a writable directory") from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise UsageError(flag, f"{directory!r} is not writable", "expected a directory this user can write to")


def local_fit_problems(spec: JobSpec, s: RunSettings) -> list[str]:
    """Tasks that no embedded agent could ever hold: rejected before anything starts."""
    problems = []
    if s.agents < 1:
        problems.append(f"--agents: {s.agents} is invalid: expected at least 1 embedded agent to run the tasks on")
    if spec.image:
        # Running them through podman would be a second containerizer to keep true to Mesos' sandbox,
        # volume, network and environment rules: a real agent is the place for images (docs/running-on-mesos.md).
        problems.append(f"$.job.image: {spec.image!r}: the embedded master runs tasks as plain processes, not in "
                        "images: expected \"\" locally, or --master with a Mesos agent that runs Docker images "
                        "(docs/running-on-mesos.md: The tfmesos image)")
    if spec.service.user and spec.service.user != getpass.getuser():
        problems.append(f"$.service.user: {spec.service.user!r}: the embedded master runs every task as "
                        f"{getpass.getuser()!r}: expected \"\" or that user locally, or --master with a real Mesos")
    if s.gpus_per_agent > 0 and not spec.gpus_needed:
        problems.append(f"--gpus-per-agent: {s.gpus_per_agent} gives every embedded agent GPUs, and Mesos offers an "
                        "agent with GPUs only to a job that asks for GPUs (GPU_RESOURCES); no role of this job does: "
                        "expected --gpus-per-agent 0, or \"gpus\" on the roles that use them")
    agent = Resources(s.agent_cpus, s.agent_mem, s.agent_disk, s.gpus_per_agent)  # every embedded agent alike
    for role in spec.roles:
        for name, need in role.demand.shortfall(agent).items():
            flag = _FLAGS.get(name)
            if flag is None:
                problems.append(f"$.roles.{role.name}.resources: {name} {role.resources.get(name):g}: the embedded "
                                f"agents offer no {name}: expected --master with agents that offer it (e.g. tfmesos "
                                f"local-master --agent-resources '0={name}:N')")
            else:
                problems.append(
                    f"$.roles.{role.name}.{name}: {role.resources.get(name):g} (plus the executor's share) does not "
                    f"fit an embedded agent, which has {agent.get(name):g} {name}: expected at most that, or raise {flag}")
    if not problems and s.agents >= 1:
        problems += _capacity_problems(spec, s, agent)
    return problems


# The embedded agents' resources and the flags that size them.
_FLAGS = {"cpus": "--agent-cpus", "mem": "--agent-mem", "disk": "--agent-disk", "gpus": "--gpus-per-agent"}


def _capacity_problems(spec: JobSpec, s: RunSettings, agent: Resources) -> list[str]:
    """The whole job against the whole embedded cluster: each task fits an agent, do all of them?

    Packed by the placer itself onto idle agents; a job it cannot place would wait out the
    placement timeout and fail, so it is refused now, naming the flag that would make room.
    """
    needs = [Need(r.name, r.count, r.demand) for r in spec.roles]
    if left_over_when_idle(needs, [(f"S{i}", "localhost", agent) for i in range(s.agents)]):
        total = sum(r.count for r in spec.roles)
        return [f"$.roles: {total} tasks do not fit {s.agents} embedded agent(s) of {s.agent_cpus:g} cpus, "
                f"{s.agent_mem:g} MB mem, {s.agent_disk:g} MB disk, {s.gpus_per_agent} gpus (plus "
                "each executor's share): expected fewer or smaller tasks, or raise --agents"]
    return []


def oversold_warnings(spec: JobSpec, s: RunSettings, machine_mem: float, machine_cpus: int) -> list[str]:
    """What the embedded agents promise beyond this machine (``machine_mem`` MB, ``machine_cpus``):
    for --agent-mem/--agent-cpus given larger than the machine, and for a job whose own tasks ask
    for more than it has. Warnings, not refusals: Mesos cannot see the machine behind the agents,
    so the tasks would start and then meet the kernel (memory) or share the cores (cpus)."""
    warnings = []
    for flag, per_agent, default, machine, unit in (
            ("--agent-mem", s.agent_mem, EMBEDDED.agent_mem, machine_mem, "MB memory"),
            ("--agent-cpus", s.agent_cpus, EMBEDDED.agent_cpus, float(machine_cpus), "cpus")):
        promised = s.agents * per_agent
        if per_agent != default and promised > machine:
            warnings.append(f"{flag}: {s.agents} embedded agent(s) x {per_agent:.10g} promise {promised:.10g} {unit}, and "
                            f"this machine has {machine:.0f}: " + (
                                "tasks that use it are killed by the kernel, not refused by Mesos"
                                if unit.endswith("memory") else "the tasks share its cores (slower, not refused)"))
    asked_mem = sum(r.demand.mem * r.count for r in spec.roles)
    if asked_mem > machine_mem and not any(w.startswith("--agent-mem") for w in warnings):
        warnings.append(f"$.roles: the job's tasks ask for {asked_mem:g} MB memory in all (with their executors), "
                        f"and this machine has {machine_mem:.0f} MB: tasks that use it are killed by the kernel")
    return warnings
