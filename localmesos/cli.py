"""``python -m localmesos`` / ``tfmesos local-master``."""
from __future__ import annotations

import argparse
import dataclasses
import gc
import logging
import os
import re
import signal
import sys
from pathlib import Path

from typing import Any, Callable

from .config import MasterConfig, QuotaConfig, Tuning
from .resources import parse_resources_text
from .roles import validate_role


def add_agent_flags(parser: argparse.ArgumentParser, what: str = "") -> None:
    """The embedded cluster's size: one definition, the same flags and defaults for
    `tfmesos local-master` and `tfmesos run` (the short names are kept as aliases)."""
    d = MasterConfig()
    parser.add_argument("--agents", type=int, default=d.agents, help=f"{what}number of logical agents (default {d.agents})")
    parser.add_argument("--agent-cpus", "--cpus", dest="agent_cpus", type=float, default=d.agent_cpus,
                        help=f"{what}cpus per agent (default {d.agent_cpus:g})")
    parser.add_argument("--agent-mem", "--mem", dest="agent_mem", type=float, default=d.agent_mem,
                        help=f"{what}memory per agent in MB (default {d.agent_mem:g})")
    parser.add_argument("--agent-disk", "--disk", dest="agent_disk", type=float, default=d.agent_disk,
                        help=f"{what}disk per agent in MB (default {d.agent_disk:g})")
    parser.add_argument("--gpus-per-agent", type=int, default=d.gpus_per_agent,
                        help=f"{what}emulated GPUs per agent (default {d.gpus_per_agent})")


def _number(convert: Callable[[str], Any], fits: Callable[[Any], bool], expected: str) -> Callable[[str], Any]:
    """An argparse type: ``convert`` of the text where ``fits`` holds, else an error saying what was expected."""
    def parse(text: str) -> Any:
        try:
            value = convert(text)
        except ValueError:
            value = None
        if value is None or not fits(value):
            raise argparse.ArgumentTypeError(f"{text[:40]!r}: expected {expected}")
        return value
    return parse


tcp_port = _number(int, lambda v: 0 <= v <= 65535, "a port number from 0 (a free one) to 65535")
_count = _number(int, lambda v: v >= 1, "a whole number of at least 1")
_seconds = _number(float, lambda v: 0 <= v < float("inf"), "a number of seconds, 0 or more")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tfmesos local-master",
        description="Run an embedded single-node Mesos master (v1 HTTP API) with logical agents.")
    d = MasterConfig()
    parser.add_argument("--port", type=tcp_port, default=d.port, help=f"master port on 127.0.0.1 (default {d.port})")
    add_agent_flags(parser)
    parser.add_argument("--first-port", type=int, default=d.first_port,
                        help=f"first port offered to tasks (default {d.first_port}); agent i offers "
                             "[first + i*n, first + (i+1)*n - 1]; 0 picks a free block (kept in the work dir) "
                             "from TFMESOS_LOCAL_PORTS (FIRST-LAST, default 20000-31999)")
    parser.add_argument("--ports-per-agent", type=int, default=d.ports_per_agent,
                        help=f"ports offered per agent (default {d.ports_per_agent})")
    parser.add_argument("--work-dir", type=Path, default=None,
                        help="sandbox root (default: a temporary directory removed on exit); a master started "
                             "again on it recovers the executors left running (they wait 15 minutes for it)")
    parser.add_argument("--no-recovery", action="store_true",
                        help="no master will be started again on --work-dir: executors end as soon as this "
                             "process does, however it ends (as without --work-dir)")
    parser.add_argument("--credentials", type=Path, default=None,
                        help='Mesos\' credentials file ({"credentials": [{"principal": P, "secret": S}]}): '
                             'enables HTTP Basic authentication')
    parser.add_argument("--reserve", "--agent-resources", action="append", default=[], metavar="INDEX=RESOURCES",
                        help="agent INDEX's resources in Mesos --resources syntax, e.g. "
                             "'0=cpus(team-a):2;mem(team-a):4096;cpus:2' (static reservations) or '2=gpus:1'; "
                             "names left out keep the defaults; a bare role ('0=team-a') reserves the whole "
                             "agent to it, as the agent's --default_role does (repeatable)")
    parser.add_argument("--quota", action="append", default=[], metavar="ROLE=RESOURCES",
                        help="quota of ROLE, e.g. 'team-a=cpus:4;mem:8192' (guarantee and limit; "
                             "'team-a=cpus:2/cpus:4' gives guarantee/limit apart; repeatable)")
    parser.add_argument("--weights", default="", metavar="ROLE=W,...",
                        help="role weights as Mesos takes them, e.g. 'team-a=2,team-b=1'")
    parser.add_argument("--acls", default=None, metavar="JSON|PATH",
                        help="Mesos ACLs (register_frameworks, run_tasks; see Mesos' authorization docs)")
    parser.add_argument("--machine-per-agent", action="store_true",
                        help="each agent on its own loopback address (127.0.0.2, .3, ...), a machine of its own "
                             "for Mesos' maintenance schedule (otherwise all share 127.0.0.1: one machine)")
    parser.add_argument("--zk", default=None,
                        help="zk://HOST:PORT/PATH: announce this master there as a Mesos master does")
    t = Tuning()
    parser.add_argument("--max-completed-frameworks", type=_count, default=t.max_completed_frameworks,
                        help="ended frameworks the master, and each agent, keep (Mesos' --max_completed_frameworks; "
                             f"default {t.max_completed_frameworks}); an agent removes the sandboxes of one it drops")
    parser.add_argument("--max-completed-tasks-per-framework", type=_count, default=t.max_completed_tasks_per_framework,
                        help="ended tasks kept per framework (Mesos' --max_completed_tasks_per_framework; "
                             f"default {t.max_completed_tasks_per_framework})")
    parser.add_argument("--gc-delay", type=_seconds, default=t.gc_delay,
                        help="seconds after a framework ended that its sandboxes are removed (Mesos' agent "
                             "--gc_delay; default one week)")
    parser.add_argument("--heartbeat-interval", type=_seconds, default=15.0,
                        help="seconds between the HEARTBEATs of a scheduler's stream (Mesos: 15, fixed)")
    parser.add_argument("--log-level", default="WARNING", help="logging level (default WARNING)")
    return parser


def team_settings(reserve: list[str], quota: list[str], weights: str, acls: str | None) -> dict[str, Any]:
    """The multi-team flags as LocalMaster keyword arguments; ValueError names the bad flag."""
    agent_resources: dict[int, str] = {}
    for item in reserve:
        index, sep, text = item.partition("=")
        if not sep or not index.strip().isdigit():
            raise ValueError(f"--reserve {item!r}: expected INDEX=RESOURCES, e.g. 0=cpus(team-a):2;mem(team-a):4096")
        try:
            if ":" in text:
                parse_resources_text(text)
            elif validate_role(text.strip()) or text.strip() == "*":
                raise ValueError(validate_role(text.strip()) or "expected a role other than '*'")
        except ValueError as exc:
            raise ValueError(f"--reserve {item!r}: {exc}") from None
        agent_resources[int(index)] = text
    quotas: dict[str, QuotaConfig] = {}
    for item in quota:
        role, sep, text = item.partition("=")
        guarantee, _, limit = text.partition("/")
        try:
            if not sep or validate_role(role.strip()) or role.strip() == "*":
                raise ValueError("expected ROLE=RESOURCES with a role other than '*'")
            guarantees = parse_resources_text(guarantee).scalars()
            limits = parse_resources_text(limit).scalars() if limit else dict(guarantees)
        except ValueError as exc:
            raise ValueError(f"--quota {item!r}: {exc}") from None
        quotas[role.strip()] = QuotaConfig(guarantees, limits)
    parsed_weights: dict[str, float] = {}
    for item in filter(None, (w.strip() for w in weights.split(","))):
        role, sep, value = item.partition("=")
        try:
            parsed_weights[role.strip()] = float(value)
            if not sep or not parsed_weights[role.strip()] > 0:
                raise ValueError
        except ValueError:
            raise ValueError(f"--weights {item!r}: expected ROLE=WEIGHT with a weight > 0") from None
    rules = None
    if acls:
        from .http.auth import load_acls  # it brings the HTTP server and asyncio: only where a master starts

        rules = load_acls(acls)
    return {"agent_resources": agent_resources, "quotas": quotas, "weights": parsed_weights, "acls": rules}


def _chosen_first_port(work_dir: Path | None, size: int) -> int:
    """A free block of ports; a restarted master with the same work dir reuses its block, since
    its running tasks hold ports from it."""
    from .ports import free_port_block

    record = work_dir / "meta" / "first_port" if work_dir else None
    if record is not None and record.is_file():
        return int(record.read_text())
    first = free_port_block(size)
    if record is not None:
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(str(first))
    return first


_STATE_SCALARS = (("cpus", ""), ("mem", " MB"), ("disk", " MB"), ("gpus", ""))  # /state always shows these


def _amounts(resources: dict[str, Any], nonzero: bool = False) -> str:
    parts = [f"{name} {resources.get(name, 0):g}{unit}" for name, unit in _STATE_SCALARS
             if resources.get(name, 0) or not nonzero]
    # Then any other scalar the agent was given (--agent-resources '0=fpgas:2').
    usual = {name for name, _ in _STATE_SCALARS}
    parts += [f"{name} {value:g}" for name, value in sorted(resources.items())
              if name not in usual and isinstance(value, (int, float)) and (value or not nonzero)]
    return ", ".join(parts)


def _indices(numbers: list[int]) -> str:
    """[0, 1, 2, 5] -> '0-2, 5'."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)


def describe(slaves: list[dict[str, Any]], work_dir: str, address: str) -> list[str]:
    """What a person starting the master needs to know, from its /state agents: the agents and
    their resources (alike ones on one line), where sandboxes go, which agents only GPU jobs are
    offered, and how to point a job at it."""
    groups: dict[str, list[int]] = {}
    for index, agent in enumerate(slaves):
        text = _amounts(agent["resources"])
        reserved = agent.get("reserved_resources") or {}
        if reserved:
            text += "; reserved: " + "; ".join(f"{role} {_amounts(r, nonzero=True)}" for role, r in sorted(reserved.items()))
        groups.setdefault(text, []).append(index)
    lines = [f"  agent{'s' if len(ix) > 1 else ''} {_indices(ix)}: {text}" for text, ix in groups.items()]
    ports = [(i, a["resources"].get("ports", "").strip("[]")) for i, a in enumerate(slaves)]
    if any(p for _, p in ports):  # each agent's own: a task's port comes from the agent it runs on
        lines.append("  task ports: " + ", ".join(f"agent {i} {p}" for i, p in ports if p))
    lines.append(f"  work dir (sandboxes): {work_dir}")
    gpu_agents = [i for i, a in enumerate(slaves) if a["resources"].get("gpus", 0) > 0]
    if gpu_agents:
        which = "every agent has" if len(gpu_agents) == len(slaves) else f"agent(s) {_indices(gpu_agents)} have"
        lines.append(f"  note: {which} GPUs, and Mesos offers an agent with GPUs only to a job that asks for "
                     "GPUs (a role with \"gpus\" > 0 makes the framework ask for GPU_RESOURCES): a CPU job "
                     + ("gets no offer here" if len(gpu_agents) == len(slaves) else "runs on the other agents"))
    lines.append(f"  run a job on it: tfmesos run options.json --master {address}   (its state: http://{address}/state)")
    return lines


def main(argv: list[str] | None = None) -> int:
    from .http.auth import load_credentials
    from .local_master import LocalMaster

    args = _parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        credentials = load_credentials(args.credentials) if args.credentials else None
        teams = team_settings(args.reserve, args.quota, args.weights, args.acls)
    except OSError as exc:
        print(f"tfmesos local-master: --credentials: cannot read {str(args.credentials)!r}: {exc.strerror}",
              file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"tfmesos local-master: {exc}", file=sys.stderr)
        return 2
    # A stop signal is a byte down a pipe that the main thread reads. Not a threading.Event:
    # set() from a handler deadlocks when the signal lands inside another handler's set(), and
    # a parent killed outright sends PDEATHSIG once per thread of it that held this child.
    # The wakeup fd is written by Python's C handler on whichever thread the kernel chose, so
    # the read returns even when the main thread itself was not interrupted.
    def request_stop(signum: int, frame: object) -> None:
        pass  # the wakeup fd has the news; nothing here may take a lock

    try:
        first_port = args.first_port or _chosen_first_port(args.work_dir, args.agents * args.ports_per_agent)
        master = LocalMaster(host="127.0.0.1", port=args.port, agents=args.agents, agent_cpus=args.agent_cpus,
                             agent_mem=args.agent_mem, agent_disk=args.agent_disk, gpus_per_agent=args.gpus_per_agent,
                             ports_per_agent=args.ports_per_agent, first_port=first_port,
                             work_dir=args.work_dir, credentials=credentials, heartbeat_interval=args.heartbeat_interval,
                             **teams, agents_recover=args.work_dir is not None and not args.no_recovery,
                             tuning=dataclasses.replace(Tuning(), max_completed_frameworks=args.max_completed_frameworks,
                                                        max_completed_tasks_per_framework=args.max_completed_tasks_per_framework,
                                                        gc_delay=args.gc_delay),
                             machine_per_agent=args.machine_per_agent)
    except ValueError as exc:
        print(f"tfmesos local-master: {exc}", file=sys.stderr)
        return 2
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    previous_wakeup = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)  # before the handlers
    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    contender = None
    stopped = False
    try:
        try:
            master.start()
        except OSError as exc:  # the port is taken, the work dir cannot be written, ...
            print(f"tfmesos local-master: cannot start: {exc.strerror or exc}: expected a free --port "
                  f"({args.port}) and a writable --work-dir", file=sys.stderr)
            return 2
        # Agents and their records live as long as the process: keep them out of the cyclic
        # collector's full scans, which otherwise run inside allocation rounds (40% of a round
        # that offers 10,000 agents).
        gc.collect()
        gc.freeze()
        if args.zk:
            from .master.zk_contender import ZkContender

            try:
                contender = ZkContender(args.zk, master.master_info())
                contender.start()
            except ValueError as exc:
                print(f"tfmesos local-master: {exc}", file=sys.stderr)
                return 2
            except Exception as exc:  # noqa: BLE001 - kazoo's own errors: ZooKeeper not reached in time
                shown = re.sub(r"(?<![\w.-])([\w.~%+-]+):[^\s/@:]+@", r"\1:***@", args.zk)  # no password echoed
                print(f"tfmesos local-master: --zk: ZooKeeper at {shown} not reached: {type(exc).__name__} {exc}",
                      file=sys.stderr)
                return 3
        print(f"tfmesos local-master listening on {master.address}", flush=True)
        where = f"{master.work_dir}" + (" (removed on exit)" if args.work_dir is None else "")
        print("\n".join(describe(master.state()["slaves"], where, master.address)), flush=True)
        while os.read(wake_r, 1)[0] not in (signal.SIGTERM, signal.SIGINT):
            pass  # another signal with a Python handler: not ours to act on
        stopped = True
    finally:
        if contender is not None:
            contender.stop()
        master.stop()
        for sig, handler in previous.items():
            # Stopped by a signal: the rest of a burst may still be coming, and the handler found
            # before (the default's) would end a process that stopped cleanly with -15 after all.
            # Ignored (it outlives the interpreter's exit, a Python handler does not).
            signal.signal(sig, signal.SIG_IGN if stopped else handler)
        signal.set_wakeup_fd(previous_wakeup)
        os.close(wake_r)
        os.close(wake_w)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
