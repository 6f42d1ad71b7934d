"""``tfmesos kill``, ``tfmesos restart ROLE:INDEX`` and ``tfmesos update OPTIONS.json``: acting on a
running job through its API.

Each POSTs to the scheduler (``/v1/shutdown``, ``/v1/restart/ROLE:INDEX``, ``/v1/update``) with the job's API
token: TFMESOS_API_TOKEN when set (never from the command line, where ``ps`` would show it),
else the one its scheduler made and kept for its owner (``records.token_for``: the state
directory, or ZooKeeper with --zk and TFMESOS_ZK_AUTH).
"""
from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from typing import Any

from ..api import routes
from ..api.token import token_header
from ..core.phase import ENDED_PHASES
from ..errors import UnreachableError
from .logs import add_record_flags, unreachable_api
from .which_job import find_live_job


def post(api: str, path: str, token: str | None = None, body: Any = None) -> tuple[int, dict[str, Any]]:
    data = b"" if body is None else json.dumps(body).encode()
    headers = {"Content-Length": str(len(data)), **token_header(token)}
    if data:
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(f"http://{api}{path}", data=data, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, json.loads(exc.read())
        except ValueError:
            return exc.code, {"error": str(exc)}


def _act(args: argparse.Namespace, name: str | None, path: str, what: str, sent: Any = None) -> int:
    from . import records

    records.find_token(args, name)  # with api_token_reads, finding the live job reads its API
    ref = find_live_job(args, name, args.command)
    api = ref.api
    assert api is not None
    try:
        code, body = post(api, path, records.token_for(args, ref.name, api), sent)
    except (urllib.error.URLError, OSError) as exc:
        print(f"tfmesos {args.command}: {unreachable_api(api, exc)}", file=sys.stderr)
        return UnreachableError.exit_code
    if code >= 300:
        problems = body.get("problems") or [body.get("error", code)]
        print(f"tfmesos {args.command}: " + "\n  ".join(map(str, problems)), file=sys.stderr)
        return 2 if code == 400 else 1  # 400: no such task, or not ROLE:INDEX; options that cannot change
    if "plan" in body:  # an update: what it changes and restarts
        print(("would change (dry run, nothing done):" if body.get("dry_run") else "updating:") + "\n  "
              + "\n  ".join(body["plan"]))
    elif "restarting" in body:
        print(body["restarting"])
    elif body.get("phase") in ENDED_PHASES:
        print(f"the job had already ended ({body['phase']}): its API and status page stop now")
    else:
        print(what)
    return 0


def cmd_kill(args: argparse.Namespace) -> int:
    return _act(args, args.name, routes.SHUTDOWN, "the job is being stopped: its tasks are killed and the framework torn down")


def cmd_restart(args: argparse.Namespace) -> int:
    return _act(args, args.name, routes.task_route(routes.RESTART, args.task), "")


def cmd_update(args: argparse.Namespace) -> int:
    """The options file is read and checked here as ``tfmesos run`` reads it (paths made absolute
    from its folder); the scheduler checks them again and says what changes."""
    from .job_options import load_job

    job = load_job(argparse.Namespace(options=args.options, dry_run=True), embedded=False)
    return _act(args, args.name, routes.UPDATE, "", {"options": job.options, "dry_run": args.dry_run})


def add_subcommands(sub: Any) -> None:
    from .which_job import RULE, job_name_argument

    kill = sub.add_parser("kill", help="stop a running job: kill its tasks and tear its framework down",
                          description="Stop a running job: kill its tasks and tear its framework down. " + RULE)
    job_name_argument(kill)
    kill.add_argument("--api", help="HOST:PORT of the scheduler API (or TFMESOS_API)")
    add_record_flags(kill)
    kill.set_defaults(func=cmd_kill)
    restart = sub.add_parser("restart", help="kill one task and relaunch it (a restart asked for, not a failure)",
                             description="Kill one task and relaunch it (a restart asked for, not a failure). " + RULE)
    job_name_argument(restart)
    restart.add_argument("task", metavar="ROLE:INDEX", help="e.g. worker:1 (tfmesos restart pss-digits worker:1)")
    restart.add_argument("--api", help="HOST:PORT of the scheduler API (or TFMESOS_API)")
    add_record_flags(restart)
    restart.set_defaults(func=cmd_restart)
    what = ("change a running job's options (worker count, env, resources, image): it saves at a planned stop "
            "and resumes with them from its checkpoint")
    update = sub.add_parser("update", help=what, description=what[0].upper() + what[1:] + ". The same options "
                            "again restart the whole job gracefully; what cannot change (the name, the Mesos role, "
                            "the principal, ...) is refused with the reason, before anything stops. " + RULE)
    job_name_argument(update)
    update.add_argument("options", metavar="OPTIONS.json", help="the job's options, whole, as tfmesos run takes them")
    update.add_argument("--dry-run", action="store_true",
                        help="say what would change and what that restarts; change nothing")
    update.add_argument("--api", help="HOST:PORT of the scheduler API (or TFMESOS_API)")
    add_record_flags(update)
    update.set_defaults(func=cmd_update)
