"""Which job a command acts on: the one rule every client command that acts on a job follows.

In this order: a job NAME (its API found where the job announced it, or through --api/TFMESOS_API
when that API runs a job of that name); else --api HOST:PORT; else TFMESOS_API; else, with none
of these, this user's one live job on this state store (the state directory's ``live`` markers).
With several live jobs and no name, the command lists them and exits 2.
"""
from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError
from ..store.state_store import DEFAULT_STATE_DIR, LiveJob, live_jobs

RULE = ("A job is named by NAME (its service.name), or --api HOST:PORT, or the TFMESOS_API variable; with "
        "none of them, a command acts on your one live job (started from this machine, with this --state-dir), "
        "and with several it lists them and exits 2.")


@dataclass(frozen=True)
class JobRef:
    """The job a command acts on: its name (None when only its API was given) and its API's address
    (None when no scheduler of it runs: the kept record is all there is)."""
    name: str | None
    api: str | None


class SeveralJobs(UsageError):
    """No job named and several live: listed, one a line (exit 2, as a usage error)."""


def state_dir(args: argparse.Namespace) -> str:
    return getattr(args, "state_dir", None) or DEFAULT_STATE_DIR


def live(args: argparse.Namespace) -> list[LiveJob]:
    return live_jobs(state_dir(args))


def _given_api(args: argparse.Namespace) -> str:
    api = getattr(args, "api", None) or os.environ.get("TFMESOS_API", "")
    if api:
        from ..scheduler.reach import parse_host_port

        parse_host_port(api, "--api" if getattr(args, "api", None) else "TFMESOS_API")  # a plain refusal
    return api


def find_job(args: argparse.Namespace, name: str | None, command: str) -> JobRef:
    """The job ``command`` acts on, by the rule above (``name``: the NAME given, if any). A NAME with
    no live scheduler gives ``JobRef(name, None)``: the caller decides whether its record will do."""
    if name:
        from .records import live_api_of

        return JobRef(name, live_api_of(args, name))
    api = _given_api(args)
    if api:
        return JobRef(None, api)
    jobs = live(args)
    where = os.path.expanduser(state_dir(args))
    if len(jobs) == 1:
        return JobRef(jobs[0].name, jobs[0].api)
    if not jobs:
        from ..store.state_store import gone_runs

        gone = "".join(f"; {g.name}'s scheduler (pid {g.pid}) has ended without a word" for g in gone_runs(state_dir(args)))
        raise UsageError(f"{command}: which job?", f"none of yours is running from this machine (state directory {where})"
                         + gone,
                         "name one (NAME, its service.name), or pass --api HOST:PORT (printed by 'tfmesos run') "
                         "or set TFMESOS_API")
    width = max(len(j.name) for j in jobs)
    listed = "\n".join(f"  {j.name:<{width}}  api {j.api}" for j in jobs)
    raise SeveralJobs(f"{command}: which job?", f"{len(jobs)} of yours are running; name one "
                      f"(tfmesos {command} NAME ...):\n{listed}")


def find_live_job(args: argparse.Namespace, name: str | None, command: str) -> JobRef:
    """``find_job``, for a command that needs the job's scheduler: a NAME not running is an error."""
    ref = find_job(args, name, command)
    if ref.api is None and name:
        from .records import gone_run

        gone = gone_run(args, name)
        if gone is not None:
            raise UsageError(f"job {name!r}", f"its scheduler (pid {gone['pid']}) has ended without a word (killed?): "
                             "nothing answers for the job any more",
                             f"'tfmesos status {name}' says what was last known of it")
    if ref.api is None:
        raise UsageError(f"job {name!r}", f"not running from this machine (no live scheduler of it announced in "
                         f"{os.path.expanduser(state_dir(args))}, nor at --api/TFMESOS_API)",
                         "check the name ('tfmesos jobs' lists the ended ones) and --state-dir, or pass --api HOST:PORT")
    return ref


def live_job_names(prefix: str = "", parsed_args: Any = None, **_: Any) -> list[str]:
    """Shell completion of NAME (argcomplete's completer signature): the live jobs' names."""
    args = parsed_args or argparse.Namespace()
    return [j.name for j in live(args) if j.name.startswith(prefix)]


def job_name_argument(parser: argparse.ArgumentParser, dest: str = "name", **kwargs: Any) -> None:
    """The optional NAME positional (``dest`` and ``kwargs`` for one that also takes ROLE:INDEX), its
    shell completion the live jobs' names."""
    kwargs = {"nargs": "?", "metavar": "NAME", "help": "the job's service.name (see the rule above)", **kwargs}
    parser.add_argument(dest, **kwargs).completer = live_job_names  # type: ignore[attr-defined]
