"""Starting the embedded cluster of a local run, sized by its ``RunSettings`` (what can never fit
it is a preflight check: ``preflight.local_fit_problems``)."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.spec import JobSpec
from ..errors import UsageError
from .run_settings import EMBEDDED_PORTS_PER_AGENT, RunSettings

if TYPE_CHECKING:
    from .console import Console


def start_embedded_master(spec: JobSpec, settings: RunSettings, console: Console,
                          child: bool = False) -> tuple[Any, JobSpec]:
    """Start the embedded master sized by ``settings`` (``child``: in a child process that dies with
    this one, see ``child_master``), for a spec that fits it (``preflight.local_fit_problems``);
    the spec gets a checkpoint directory."""
    if child:
        from .child_master import ChildMaster

        master_proc: Any = ChildMaster(settings.agents, settings.agent_cpus, settings.agent_mem, settings.agent_disk,
                                       settings.gpus_per_agent, EMBEDDED_PORTS_PER_AGENT).start()
        what = f"embedded Mesos master (child process {master_proc.proc.pid})"
    else:
        from localmesos import LocalMaster
        from localmesos.ports import free_port_block

        try:
            # A block of ports nobody uses now (from TFMESOS_LOCAL_PORTS): other embedded masters may run here.
            first_port = free_port_block(settings.agents * EMBEDDED_PORTS_PER_AGENT)
        except ValueError as exc:
            raise UsageError("the embedded master", str(exc)) from None
        master_proc = LocalMaster(
            first_port=first_port,
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
