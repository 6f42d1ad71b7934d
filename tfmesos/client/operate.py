"""``tfmesos kill`` and ``tfmesos restart ROLE:INDEX``: acting on a running job through its API.

Both POST to the scheduler (``/v1/shutdown``, ``/v1/restart/ROLE:INDEX``) with the job's API
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


def post(api: str, path: str, token: str | None = None) -> tuple[int, dict[str, Any]]:
    headers = {"Content-Length": "0", **token_header(token)}
    request = urllib.request.Request(f"http://{api}{path}", data=b"", method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, json.loads(exc.read())
        except ValueError:
            return exc.code, {"error": str(exc)}


def _act(args: argparse.Namespace, name: str | None, path: str, what: str) -> int:
    from . import records

    records.find_token(args, name)  # with api_token_reads, finding the live job reads its API
    ref = find_live_job(args, name, args.command)
    api = ref.api
    assert api is not None
    try:
        code, body = post(api, path, records.token_for(args, ref.name, api))
    except (urllib.error.URLError, OSError) as exc:
        print(f"tfmesos {args.command}: {unreachable_api(api, exc)}", file=sys.stderr)
        return UnreachableError.exit_code
    if code >= 300:
        print(f"tfmesos {args.command}: {body.get('error', code)}", file=sys.stderr)
        return 2 if code == 400 else 1  # 400: no such task, or not ROLE:INDEX
    if "restarting" in body:
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
