"""Finding a job's kept records for ``tfmesos status``, ``jobs`` and ``logs`` (the client's
reading side of state_store's ``keep_end``): in the state directory, or in ZooKeeper with
``--zk``, as ``tfmesos run`` was given them; and asking a scheduler's API whether it still runs."""
from __future__ import annotations

import argparse
import json
import os
from typing import Any

from ..core.status import NewerStatusError, StatusSnapshot
from ..errors import UsageError, redact_url
from ..store.state_store import (DEFAULT_STATE_DIR, DirStore, StateStore, ZkStore, dir_names, gone_runs, live_names,
                                  open_store)
from .history import newest_first, same_address

QUICK_PROBE_SECONDS = 0.5  # a scheduler on this network answers at once; a gone one is refused at once


def where(args: argparse.Namespace) -> str:
    """Where kept records are read from, as shown to the user (a ZooKeeper password hidden)."""
    return redact_url(getattr(args, "zk", None) or "") or os.path.expanduser(getattr(args, "state_dir", None)
                                                                            or DEFAULT_STATE_DIR)


def _store(args: argparse.Namespace, name: str) -> StateStore:
    return open_store(getattr(args, "zk", None) or "", getattr(args, "state_dir", None) or "", name)


def _names(args: argparse.Namespace) -> list[str]:
    zk = getattr(args, "zk", None)
    if not zk:
        return dir_names(getattr(args, "state_dir", None) or "")
    store = ZkStore(zk, "-")  # a connection to list with: names() does not depend on the name
    try:
        return store.names()
    finally:
        store.close()


def recorded(args: argparse.Namespace, name: str) -> dict[str, Any] | None:
    """The newest record of a job: its running record (saved with --state-dir/--zk while it
    runs) when that is newer than its last kept end, else that end; None when there is neither."""
    store = _store(args, name)
    try:
        ends = store.ends()
        try:
            running = store.load()
        except ValueError:  # a running record this tfmesos cannot read: its kept ends still can be
            running = None
    finally:
        store.close()
    last = ends[0] if ends else None
    if running is not None and not running.get("finished") and (
            last is None or running["job"].get("started_at", 0) > (last.get("end") or {}).get("at", 0)):
        return running
    return last


def newest_end(args: argparse.Namespace, name: str) -> dict[str, Any]:
    store = _store(args, name)
    try:
        ends = store.ends()
    finally:
        store.close()
    if not ends:
        raise UsageError(f"job {name!r}", f"no ended run of it is kept in {where(args)}",
                         "check the name and --state-dir/--zk (what 'tfmesos run' was given), "
                         "or --api HOST:PORT for a running job")
    return ends[0]


def all_ends(args: argparse.Namespace, name: str | None = None) -> list[dict[str, Any]]:
    """Every kept end (of ``name`` only, when given), newest first."""
    out: list[dict[str, Any]] = []
    for n in [name] if name else _names(args):
        store = _store(args, n)
        try:
            out += store.ends()
        finally:
            store.close()
    return newest_first(out)


def end_served_at(args: argparse.Namespace, api: str) -> dict[str, Any] | None:
    """The newest kept end of the job whose API was ``api`` (HOST:PORT)."""
    for rec in all_ends(args):
        if same_address((rec.get("end") or {}).get("api"), api):
            return rec
    return None


def probe_status(api: str, timeout: float) -> StatusSnapshot | None:
    """/v1/status of a scheduler that answers within ``timeout`` (one try), else None; raises
    UsageError when that scheduler serves a newer status than this tfmesos reads."""
    from ..api import routes
    from ..api.token import token_header
    from ..errors import UnreachableError
    from ..scheduler.reach import parse_host_port, probe_http

    try:
        status, body = probe_http(parse_host_port(api, "--api"), routes.STATUS, timeout, "the scheduler API", "",
                                  token_header())
        if status != 200:
            return None
        return StatusSnapshot.from_json(json.loads(body))
    except NewerStatusError as exc:
        raise UsageError(f"the scheduler API at {api}", str(exc)) from None
    except (UnreachableError, ValueError):
        return None


def api_candidates(args: argparse.Namespace, name: str | None) -> list[str]:
    """Where a job's API may be, in this order: --api, TFMESOS_API, and (given the job's name) the
    API a job of that name running from this machine announced."""
    found = [api for api in (getattr(args, "api", None), os.environ.get("TFMESOS_API", "")) if api]
    if name:
        announced = DirStore(getattr(args, "state_dir", None) or DEFAULT_STATE_DIR, name).announced()
        if announced:
            found.append(announced)
    return list(dict.fromkeys(found))


def api_of(args: argparse.Namespace, name: str | None) -> str:
    """The first of ``api_candidates``, or ""."""
    candidates = api_candidates(args, name)
    return candidates[0] if candidates else ""


def live_status_of(args: argparse.Namespace, name: str) -> tuple[str, StatusSnapshot] | None:
    """The first candidate API where a scheduler answers for job ``name`` (an exported TFMESOS_API
    of another job is passed over, not shown as this one), with its status."""
    for api in api_candidates(args, name):
        snap = probe_status(api, QUICK_PROBE_SECONDS)
        if snap is not None and snap.name == name:
            return api, snap
    return None


def running(args: argparse.Namespace, name: str | None = None) -> list[StatusSnapshot]:
    """The live status of each job running from this machine (announced in the state directory)."""
    if getattr(args, "zk", None):
        return []
    out = []
    for n in [name] if name else _names(args):
        live = live_status_of(args, n) if DirStore(getattr(args, "state_dir", None) or DEFAULT_STATE_DIR,
                                                    n).announced() else None
        if live is not None:
            out.append(live[1])
    return out


def gone_run(args: argparse.Namespace, name: str) -> dict[str, Any] | None:
    """The live marker of job ``name``'s run from this machine whose scheduler is gone without a
    word (history.gone_lines reads it), or None: read at once, no API asked."""
    holder = DirStore(getattr(args, "state_dir", None) or DEFAULT_STATE_DIR, name).gone()
    return {**holder.to_json(), "on_this_host": holder.on_this_host} if holder is not None else None


def gone(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every such marker in the state directory, by name."""
    return [{**h.to_json(), "on_this_host": h.on_this_host}
            for h in gone_runs(getattr(args, "state_dir", None) or DEFAULT_STATE_DIR)]


def gone_at(args: argparse.Namespace, api: str) -> dict[str, Any] | None:
    """The marker of a run whose API was ``api`` (HOST:PORT) and whose scheduler is gone, or None."""
    return next((g for g in gone(args) if same_address(g.get("api"), api)), None)


def live_api_of(args: argparse.Namespace, name: str) -> str | None:
    """The API of job ``name`` when a scheduler answers there for that job (``live_status_of``)."""
    live = live_status_of(args, name)
    return live[0] if live else None



def sandbox_present(attempt: dict[str, Any]) -> bool | None:
    """Whether a task attempt's sandbox is still there: its directory on this machine, or gone from
    it (an agent on this machine: the embedded master removed it); None for another machine's."""
    directory, agent = attempt.get("directory"), attempt.get("agent") or ""
    if directory and os.path.isdir(directory):
        return True
    host = agent.rpartition(":")[0]
    return False if host in ("127.0.0.1", "localhost", "::1", "[::1]") or not agent else None


def token_for(args: argparse.Namespace, name: str | None, api: str) -> str:
    """The token to send to the job's API: TFMESOS_API_TOKEN when set (an operator's own), else
    the one the job's scheduler made and kept (store/state_store.py): for job ``name`` in the state
    directory, else in ZooKeeper with --zk (read as TFMESOS_ZK_AUTH's user); without a name, the
    one kept beside the live marker that announced ``api``. "" when there is none to be found."""
    from ..api.token import api_token
    from ..store.state_store import zk_auth

    token = api_token()
    if token:
        return token
    state_dir = getattr(args, "state_dir", None) or DEFAULT_STATE_DIR
    if name:
        token = DirStore(state_dir, name).token() or ""
        zk, auth = getattr(args, "zk", None), zk_auth()
        if not token and zk and auth:
            store = ZkStore(zk, name)
            try:
                token = store.token(auth) or ""
            finally:
                store.close()
        return token
    for stored in live_names(state_dir):
        local = DirStore(state_dir, stored)
        if same_address(local.announced(), api):
            return local.token() or ""
    return ""


def find_token(args: argparse.Namespace, name: str | None) -> None:
    """Reading commands (status, logs) send the job's own token too, found as ``token_for`` finds
    it: a job with ``service.api_token_reads`` answers its owner without an exported token."""
    from ..api.token import use_kept

    use_kept(token_for(args, name, api_of(args, name)))
