"""``tfmesos run --dry-run``: what the job would send to Mesos, launching nothing.

``--output json`` prints the FrameworkInfo the scheduler subscribes with and the TaskInfos it
would launch on a synthetic offer big enough for the whole gang, built by the code a real run
uses: the core's ``Job`` places the gang on the offer and returns its ``Launch`` actions,
``mesos.taskinfo`` turns each into a TaskInfo, ``mesos.driver`` gives the FrameworkInfo, and
``cluster_spec`` is the ClusterSpec each executor gets: in its TaskInfo, deflated (the payload's
``cluster_z``), for a gang of at most ``INLINE_MAX_ADDRESSES`` addresses, else sent once it asks
(``inline`` says which). Only the
offer is made up (one agent, ids ``DRY_RUN_AGENT_ID``/``DRY_RUN_OFFER_ID``): a real master gives
its own. Environment values are hidden (``tfmesos.masking``) in the options and in each TaskInfo's
data (the ``TaskPayload``) unless ``--show-env-values``; secrets are never read here, their
values always shown as ``<hidden>`` (base64 of it in ``secret_files``). ``--output text`` (the default) prints
the options and a task table; ``--output options`` only the resolved options, the form
``dcos package install --options`` takes.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
from typing import Any, Mapping

from ..core.actions import Launch
from ..core.placement.fit import names_of
from ..core.job.job import Job
from ..core.secrets import SecretValues, read_by_scheduler
from ..core.spec import EXECUTOR_CPUS, EXECUTOR_MEM, JobSpec, Resources, add
from ..masking import HIDDEN, mask_entry, mask_options
from ..mesos.driver import framework_info
from ..mesos.messages import ClusterSpecMessage, TaskPayload, decode, encode, to_wire
from ..mesos.offers import parse_offer
from ..mesos.taskinfo import ExecutorSettings, OfferLedger, build_task_info

DRY_RUN_AGENT_ID = "dry-run-agent"
DRY_RUN_OFFER_ID = "dry-run-offer"
DRY_RUN_HOSTNAME = "dry-run-agent"
FIRST_PORT = 31000  # Mesos' default agent port range starts here (and the embedded master's tests)


@dataclasses.dataclass(frozen=True)
class DryRun:
    framework_info: dict[str, Any]
    offer: dict[str, Any]
    task_infos: list[dict[str, Any]]
    payloads: list[dict[str, Any]]  # each TaskInfo's data, decoded (the TaskPayload as sent)
    # The ClusterSpec's version and every task's address, shown once for the whole gang: what
    # each executor takes from its TaskInfo (``inline``: a small gang), or is sent once it asks.
    cluster_spec: dict[str, Any]
    inline: bool


def _up(value: float) -> float:
    """Mesos keeps three decimals: round a total up so that the sum of its parts still fits."""
    return math.ceil(round(value * 1000, 6)) / 1000


def synthetic_offer(spec: JobSpec) -> dict[str, Any]:
    """One agent's offer holding exactly the gang (tasks plus executors) and one port per task."""
    keys = spec.task_keys()
    demands = [spec.role(k.role).demand for k in keys]  # type: ignore[union-attr]
    role = spec.service.mesos_roles[0]

    def entry(name: str, **value: Any) -> dict[str, Any]:
        return {"name": name, **value, "role": "*", "allocation_info": {"role": role}}

    resources = [entry("ports", type="RANGES", ranges={"range": [{"begin": FIRST_PORT,
                                                                  "end": FIRST_PORT + max(len(keys), 1) - 1}]})]
    for name, total in sum(demands, Resources()).items():  # every scalar the gang asks for, by name
        if total > 0:
            resources.append(entry(name, type="SCALAR", scalar={"value": _up(total)}))
    return {"id": {"value": DRY_RUN_OFFER_ID}, "agent_id": {"value": DRY_RUN_AGENT_ID},
            "hostname": DRY_RUN_HOSTNAME, "resources": resources, "allocation_info": {"role": role}}


def hide_env(task_info: dict[str, Any]) -> tuple[dict[str, Any], TaskPayload]:
    """The TaskInfo with its payload's env values hidden (re-encoded), and that payload."""
    payload = decode(task_info["data"], "the dry run")
    assert isinstance(payload, TaskPayload)
    hidden = payload.replace(env=mask_entry(payload.env))
    return {**task_info, "data": encode(hidden)}, hidden


def webui_url(spec: JobSpec, api_host: str, api_port: int | None) -> str:
    """The FrameworkInfo's webui_url as ``tfmesos run`` sets it, when the API's port is known
    before it listens (``--api-port``/``service.api_port``; 0 picks one at start: none shown)."""
    port = spec.service.api_port if api_port is None else api_port
    host = os.environ.get("HOST") or api_host  # HOST: the agent's name under Marathon
    return f"http://{host}:{port}" if port else ""


def dry_run(spec: JobSpec, python: str = sys.executable, webui: str = "", show_env_values: bool = False) -> DryRun:
    """Place the gang on a synthetic offer as a real run would, and build what it would send."""
    offer = synthetic_offer(spec)
    job = Job.new(spec, now=0.0)
    launches = [a for a in job.offers([parse_offer(offer, spec.service.revocable)], 0.0) if isinstance(a, Launch)]
    if not launches:  # the offer is the gang's exact sum: the core refusing it is a bug here
        raise RuntimeError(f"the synthetic offer did not place the job: {job.explain_unplaced()}")
    # The env:/file: secrets are not read: their payload entries say what a run would send, hidden.
    hidden = SecretValues({use: HIDDEN.encode() for use in read_by_scheduler(spec.secrets)})
    settings = ExecutorSettings(python=spec.python or python, framework_user=spec.service.user, secrets=hidden)
    ledger = OfferLedger(offer, spec.service.revocable)
    # A small gang's Launches carry the ClusterSpec (core/job/cluster_spec_sync.py): deflated into
    # each TaskInfo as a run's shell does it (scheduler/shell_actions.py).
    inline = [ClusterSpecMessage.of(a.cluster_spec["version"], a.cluster_spec["cluster"]) if a.cluster_spec else None
              for a in launches]
    infos = [build_task_info(spec, t, a.agent_id, ledger, settings, carried)
             for a, carried in zip(launches, inline) for t in a.tasks]
    if show_env_values:
        shown = [(info, decode(info["data"], "the dry run")) for info in infos]
    else:
        shown = [hide_env(info) for info in infos]
    message = job.cluster_spec_message()
    assert message is not None  # the whole gang is placed: every address is known
    return DryRun(framework_info(spec, None, webui), offer, [info for info, _ in shown],
                  [to_wire(payload) for _, payload in shown],  # type: ignore[arg-type]
                  {"version": message["version"], "cluster": message["cluster"]},
                  all(carried is not None for carried in inline))


def plan_lines(spec: JobSpec) -> list[str]:
    """The text form: one row per task, what it takes and what it runs."""
    # A column per resource: the usual four, then any other the roles ask for (fpgas, ...).
    names = names_of(Resources(1, 1, 1, 1), *(r.resources for r in spec.roles))
    width = {n: max(7, len(n) + 1) for n in names}
    lines = [f"{'task':<14} " + " ".join(f"{n:>{width[n]}}" for n in names) + "  runs"]

    def row(label: str, r: Mapping[str, float], what: str) -> str:
        return f"{label:<14} " + " ".join(f"{r.get(n, 0.0):>{width[n]}g}" for n in names) + f"  {what}"

    for role in spec.roles:
        what = "built-in TensorFlow server" if role.command is None else role.command
        lines += [row(f"{role.name}:{i}", role.resources, what) for i in range(role.count)]
    # What decides whether a job fits is the task and its executor together (RoleSpec.demand).
    tasks = sum(role.count for role in spec.roles)
    lines.append(row("+ executor", Resources(EXECUTOR_CPUS, EXECUTOR_MEM), "beside each task: its tfmesos executor, counted against the offer too"))
    total: dict[str, float] = {}
    for role in spec.roles:
        add(total, role.demand, role.count)
    lines.append(row("in all", total, f"{tasks} task{'s' if tasks != 1 else ''} with their executors"))
    lines.append(f"success when: {', '.join(str(k) for k in spec.success_keys)} finished with exit 0")
    return lines


def dry_run_document(options: dict[str, Any], spec: JobSpec, webui: str = "",
                     show_env_values: bool = False) -> dict[str, Any]:
    """What ``--output json`` prints."""
    plan = dry_run(spec, webui=webui, show_env_values=show_env_values)
    return {
        "options": options if show_env_values else mask_options(options),
        "framework_info": plan.framework_info,
        "offer": plan.offer,
        "task_infos": plan.task_infos,
        "payloads": plan.payloads,
        "cluster_spec": plan.cluster_spec,
        "cluster_spec_in_task_infos": plan.inline,
    }


def print_dry_run(options: dict[str, Any], spec: JobSpec, output: str, show_env_values: bool = False,
                  api_host: str = "127.0.0.1", api_port: int | None = None) -> int:
    shown = options if show_env_values else mask_options(options)
    if output == "options":  # what `dcos package install --options` takes
        print(json.dumps(shown, indent=2))
    elif output == "json":
        document = dry_run_document(options, spec, webui_url(spec, api_host, api_port), show_env_values)
        print(json.dumps(document, indent=2))
    else:
        print(json.dumps(shown, indent=2))
        print("\n".join(plan_lines(spec)))
    return 0
