"""``tfmesos logs ROLE:INDEX``: a running job's task logs through the scheduler's API
(``GET /v1/logs/ROLE:INDEX``, served by ``tfmesos.scheduler.task_logs``: the agents need not be
reachable from where it runs), or a finished job's from its kept record (the agent's files API,
``tfmesos.mesos.agent_files``, the local sandbox, or the kept log ends).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from ..api import routes
from ..api.follow import FOLLOW_POLL_SECONDS
from ..api.token import token_header
from ..core.phase import ENDED_PHASES
from ..core.status import NewerStatusError, StatusSnapshot
from ..errors import UnreachableError, UsageError
from ..mesos.agent_files import CHUNK, AgentFiles, LogError, get_json, sandbox_directory, tail_offset, to_bytes



def fetch_chunk(api: str, task: str, query: dict[str, Any]) -> dict[str, Any]:
    url = f"http://{api}{routes.task_route(routes.LOGS, task)}?{urllib.parse.urlencode(query)}"
    try:
        return get_json(url, timeout=30, headers=token_header())
    except urllib.error.HTTPError as exc:
        try:
            text = json.loads(exc.read()).get("error", str(exc))
        except ValueError:
            text = str(exc)
        raise LogError(exc.code, text) from None


def _status(api: str) -> StatusSnapshot | None:
    """The job's /v1/status, or None when the scheduler does not answer; a status of a newer
    version than this tfmesos reads is a ``UsageError`` saying to upgrade."""
    try:
        return StatusSnapshot.from_json(get_json(f"http://{api}{routes.STATUS}", headers=token_header()))
    except NewerStatusError as exc:  # says to upgrade: not a scheduler that is gone
        raise UsageError(f"the scheduler API at {api}", str(exc)) from None
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _job_over(api: str) -> bool:
    snap = _status(api)
    return snap is None or snap.phase in ENDED_PHASES  # gone: nothing more will be written


def _task_state(snap: StatusSnapshot | None, task: str) -> str | None:
    """The task's state in a /v1/status snapshot, None when the job has no such task."""
    return next((t.state for t in snap.tasks if t.name == task), None) if snap is not None else None


def _first_chunk(api: str, task: str, query: dict[str, Any], follow: bool, stop: threading.Event,
                 err: Any) -> dict[str, Any]:
    """The first chunk; with ``follow``, a task not started yet is waited for (said once)."""
    noted = False
    while True:
        try:
            return fetch_chunk(api, task, query)
        except LogError as exc:
            if exc.status not in (404, 503) or not follow:
                raise
            snap = _status(api)
            state = _task_state(snap, task)
            if snap is None or state is None or snap.phase in ENDED_PHASES:
                raise
            if not noted:
                err.write(f"tfmesos logs: waiting for {task} to start (job {snap.phase}, task {state})\n")
                err.flush()
                noted = True
        if stop.wait(FOLLOW_POLL_SECONDS):
            raise LogError(404, f"{task} did not start")


def _fetch_while_running(api: str, task: str, query: dict[str, Any], stop: threading.Event) -> dict[str, Any]:
    """A chunk of an attempt that may not be readable for a moment: a relaunch's new attempt
    before its agent lists the sandbox (404), or its agent's address not known yet (503), or a
    passing agent error (502). Asked again each poll while the job runs (it ended the follow)."""
    while True:
        try:
            return fetch_chunk(api, task, query)
        except LogError as exc:
            if exc.status not in (404, 502, 503) or _job_over(api):
                raise
        if stop.wait(FOLLOW_POLL_SECONDS):
            return fetch_chunk(api, task, query)  # stopping: one last try, its error as it is


def stream_log(api: str, task: str, file: str, tail: int | None, follow: bool, out: Any,
               stop: threading.Event | None = None, err: Any = None) -> int:
    """Write a task's log to ``out`` (a binary stream); with ``follow``, keep writing what comes,
    and go on with the next attempt when the task is relaunched. Returns the bytes written."""
    stop = stop or threading.Event()
    err = err or sys.stderr
    written = 0
    query: dict[str, Any] = {"file": file}
    query.update({"tail": tail} if tail is not None else {"offset": 0})
    chunk = _first_chunk(api, task, query, follow, stop, err)
    last = False  # the read after the job's end: what it has is all there will be
    while True:
        data = to_bytes(chunk["data"])
        out.write(data)
        out.flush()
        written += len(data)
        base = {"file": file, "attempt": chunk["task_id"]}
        if chunk["next_offset"] < chunk["size"]:
            chunk = fetch_chunk(api, task, {**base, "offset": chunk["next_offset"]})
            continue
        if not follow or last:
            return written
        if not chunk["latest"]:
            newer = chunk["attempts"][chunk["attempts"].index(chunk["task_id"]) + 1]
            out.write(f"--- {task} relaunched as {newer} ---\n".encode())
            chunk = _fetch_while_running(api, task, {"file": file, "attempt": newer, "offset": 0}, stop)
            continue
        over = stop.wait(FOLLOW_POLL_SECONDS) or _job_over(api)
        try:
            chunk = _fetch_while_running(api, task, {**base, "offset": chunk["next_offset"]}, stop)
        except (urllib.error.URLError, OSError):
            if over or _job_over(api):
                return written  # the scheduler left with the job (it lingers for a last read: TaskLogs.linger)
            raise
        last = over  # read after the end: written out to its last byte, then done


# ---------------------------------------------------------------------- a finished job's logs
class LocalFiles:
    """A sandbox on this machine, read the way ``AgentFiles`` reads one through its agent."""

    def read(self, path: str, offset: int, length: int | None = None) -> tuple[bytes, int]:
        try:
            with open(path, "rb") as f:
                if offset < 0:
                    return b"", os.fstat(f.fileno()).st_size
                f.seek(offset)
                return f.read(CHUNK if length is None else length), offset
        except OSError as exc:
            raise LogError(404, f"{path}: {exc.strerror}") from None


def kept_log(attempt: dict[str, Any], framework_id: str, file: str, tail: int | None, out: Any) -> str:
    """Write an ended job's task log, as its record locates it (``history.log_attempts``), to
    ``out``: through the agent's files API while the agent answers, else from the sandbox path
    when it is on this machine. Returns where it was read; LogError when neither works."""
    agent, directory, task_id = attempt.get("agent"), attempt.get("directory"), attempt["task_id"]
    why = "the job's record names no agent for it"
    if agent:
        try:
            files: AgentFiles | LocalFiles = AgentFiles(agent)
            directory = directory or sandbox_directory(files.state(), framework_id, task_id)  # type: ignore[union-attr]
            if not directory:
                raise LogError(404, f"agent {agent} has no sandbox of {task_id} any more")
            _copy(files, f"{directory}/{file}", tail, out)
            return f"agent {agent}"
        except LogError as exc:
            why = str(exc)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            why = f"agent {agent} does not answer ({getattr(exc, 'reason', exc)})"
    if directory and os.path.isdir(directory):
        _copy(LocalFiles(), os.path.join(directory, file), tail, out)
        return f"{directory} on this machine"
    kept = (attempt.get("tail") or {}).get(file)
    if kept is not None:
        lines = kept.splitlines(keepends=True)
        out.write(to_bytes("".join(lines[-tail:] if tail is not None and tail > 0 else lines)))
        out.flush()
        return "the job's record (its sandbox is gone: the end of the log kept when the job ended)"
    where = (f"; its sandbox {directory} is not on this machine (the embedded master of a local 'tfmesos run' "
             "removes its sandboxes when the run ends: --keep-serving SECONDS keeps them readable meanwhile)"
             if directory else "")
    raise LogError(404, f"the log of {task_id} is gone: {why}{where}")


def _copy(files: AgentFiles | LocalFiles, path: str, tail: int | None, out: Any) -> None:
    _, size = files.read(path, -1)
    offset = tail_offset(files, path, size, tail) if tail is not None else 0  # type: ignore[arg-type]
    while offset < size:
        data, _ = files.read(path, offset, min(CHUNK, size - offset))
        if not data:
            break
        out.write(data)
        offset += len(data)
    out.flush()


def cmd_logs(args: argparse.Namespace) -> int:
    from .which_job import find_job

    name, task = args.name, args.task
    file = "stderr" if args.stderr else "stdout"
    from .records import find_token

    find_token(args, name)  # first: with api_token_reads, finding the live job reads its API
    ref = find_job(args, name, "logs")
    if ref.name != name:
        find_token(args, ref.name)
    if ref.api is None:
        return _cmd_kept_logs(args, ref.name or "", task, file)
    api = ref.api
    try:
        written = stream_log(api, task, file, args.tail, args.follow, sys.stdout.buffer)
    except LogError as exc:
        starting = exc.status == 503 or "not been launched" in str(exc) or "not started" in str(exc)
        hint = "; the job is still placing or starting it: --follow waits for its output" if starting and not args.follow else ""
        print(f"tfmesos logs: {exc}{hint}", file=sys.stderr)
        return 2 if exc.status == 400 else 1  # 400: the task or file asked for is not one
    except (urllib.error.URLError, OSError) as exc:
        print(f"tfmesos logs: {unreachable_api(api, exc)}", file=sys.stderr)
        return UnreachableError.exit_code
    except KeyboardInterrupt:
        return 130
    if not written and not args.follow:
        state = _task_state(_status(api), task)
        print(f"tfmesos logs: {task}'s {file} is empty so far" + (f" (task {state})" if state else "")
              + "; --follow waits for what it writes", file=sys.stderr)
    return 0


def _cmd_kept_logs(args: argparse.Namespace, name: str, task: str, file: str) -> int:
    from .history import log_attempts, when
    from .records import newest_end

    rec = newest_end(args, name)
    attempts = log_attempts(rec, task)
    if not attempts:
        known = ", ".join(((rec.get("end") or {}).get("logs") or {})) or "none"
        print(f"tfmesos logs: {task}: not a task of job {name!r}'s last run: expected one of {known}", file=sys.stderr)
        return 1
    try:
        source = kept_log(attempts[-1], rec.get("framework_id") or "", file, args.tail, sys.stdout.buffer)
    except LogError as exc:
        print(f"tfmesos logs: {exc}", file=sys.stderr)
        return 1
    # On stderr: which run this was (a job of that name may be running again: --api reads that one).
    print(f"tfmesos logs: {task} of the run of {name} that ended {when((rec.get('end') or {}).get('at'))}, "
          f"read from {source}", file=sys.stderr)
    return 0


def lines_count(text: str) -> int:
    """--tail's N: a whole number of lines >= 1 (0 and less would read as 'everything' somewhere)."""
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: expected a whole number of lines >= 1")
    return int(text)


def unreachable_api(api: str, exc: BaseException) -> str:
    """One line for a scheduler API that did not answer (exit code: UnreachableError's)."""
    from ..scheduler.reach import why_unreachable

    why = why_unreachable(getattr(exc, "reason", exc))  # urllib wraps the socket's error
    return f"cannot reach the scheduler API at {api}: {why}; check --api or TFMESOS_API, and that the job runs"


def add_subcommand(sub: Any) -> None:
    from .which_job import RULE, job_name_argument

    what = ("print a task's stdout or stderr from its Mesos sandbox (a running job's, or with NAME, the last run's "
            "of that job once it ended)")
    p = sub.add_parser("logs", help=what, description=what[0].upper() + what[1:] + ". " + RULE)
    job_name_argument(p, help="the job's service.name: that job, running or ended (see the rule above)")
    p.add_argument("task", metavar="ROLE:INDEX", help="e.g. worker:1, or with a name: tfmesos logs pss-digits chief:0")
    p.add_argument("--api", help="HOST:PORT of the scheduler API (or TFMESOS_API)")
    p.add_argument("--stderr", action="store_true", help="stderr instead of stdout")
    p.add_argument("-f", "--follow", action="store_true", help="keep printing what the task writes, across relaunches")
    p.add_argument("--tail", type=lines_count, metavar="N", help="only the last N lines (N >= 1)")
    add_record_flags(p)
    p.set_defaults(func=cmd_logs)


def add_record_flags(p: argparse.ArgumentParser) -> None:
    """Where ended jobs' records are kept: what `tfmesos run` was given."""
    p.add_argument("--state-dir", help="the state directory 'tfmesos run' used (default ~/.tfmesos/state)")
    p.add_argument("--zk", help="zk://HOST:PORT/PATH when 'tfmesos run' kept its state in ZooKeeper")
