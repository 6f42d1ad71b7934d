"""The embedded cluster of a local run: its size, what can never fit it (refused before anything
starts), and starting its master."""
from __future__ import annotations

import dataclasses
import getpass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localmesos.config import MasterConfig
from ..options.load import OptionsError
from ..core.fit import Need, left_over_when_idle
from ..core.spec import JobSpec, Resources

if TYPE_CHECKING:
    from .console import Console
    from .session import RunSettings

EMBEDDED_PORTS_PER_AGENT = 100
EMBEDDED = MasterConfig()  # the embedded agents' defaults have this one home


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


def start_embedded_master(spec: JobSpec, settings: RunSettings, console: Console,
                          child: bool = False) -> tuple[Any, JobSpec]:
    """Start the embedded master sized by ``settings`` (``child``: in a child process that dies with
    this one, see ``child_master``); the spec gets a checkpoint directory."""
    problems = local_fit_problems(spec, settings)
    if problems:
        raise OptionsError(problems)
    if child:
        from .child_master import ChildMaster

        master_proc: Any = ChildMaster(settings.agents, settings.agent_cpus, settings.agent_mem, settings.agent_disk,
                                       settings.gpus_per_agent).start()
        what = f"embedded Mesos master (child process {master_proc.proc.pid})"
    else:
        from localmesos import LocalMaster
        from localmesos.ports import free_port_block

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
        what = "embedded Mesos master"
    console.event(f"{what} on {master_proc.address} with {settings.agents} agent(s); "
                  f"sandboxes under {master_proc.work_dir}")
    return master_proc, with_checkpoints(spec, master_proc.work_dir)


def with_checkpoints(spec: JobSpec, work_dir: Path) -> JobSpec:
    """Every embedded agent shares this machine's disk: a job without a checkpoint directory gets
    one in the embedded master's work directory, so that relaunched tasks resume; it goes away
    with the master's work directory."""
    if spec.checkpoint_dir:
        return spec
    return dataclasses.replace(spec, checkpoint_dir=str(work_dir / "checkpoints" / spec.service.name))
