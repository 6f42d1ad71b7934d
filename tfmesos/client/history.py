"""Finished jobs as people read them: ``tfmesos status NAME`` and ``tfmesos jobs`` from the
records kept when jobs end (format 4's ``end``, store/format.py; state_store's ``keep_end``/``ends``).

Pure functions over those records: no I/O, the clock passed in.
"""
from __future__ import annotations

import time
from typing import Any, Callable

from ..core.phase import ENDED_PHASES
from ..api.status_text import phase_text, progress_text, task_row
from ..core.tensorflow.profile import TENSORFLOW
from ..core.status import Progress, StatusSnapshot, TaskStatus



def ended(rec: dict[str, Any]) -> bool:
    return rec["job"].get("phase") in ENDED_PHASES


def name_of(rec: dict[str, Any], fallback: str = "") -> str:
    return ((rec.get("options") or {}).get("service") or {}).get("name") or fallback


def tasks_of(rec: dict[str, Any]) -> list[TaskStatus]:
    """The record's tasks as /v1/status shows them (what ``task_row`` prints), in the profile's role order."""
    rows = []
    for t in rec["job"].get("tasks", []):
        role, index = t["key"]
        rows.append(TaskStatus(role=role, index=index, task_id=t.get("task_id", ""), agent_id=t.get("agent_id", ""),
                               endpoint=f"{t['hostname']}:{t['port']}" if t.get("hostname") else "",
                               state=t.get("state", ""), restarts=t.get("restarts", 0),
                               requested_restarts=t.get("requested_restarts", 0), planned_stops=t.get("planned_stops", 0),
                               exit_code=t.get("exit_code"),
                               reason=t.get("reason", ""), message=t.get("message", ""),
                               exception=t.get("exception", "")))
    rank = TENSORFLOW.rank  # a record has no spec: its framework's, the only one so far
    return sorted(rows, key=lambda r: (rank(r.role), r.index))


def log_attempts(rec: dict[str, Any], task: str) -> list[dict[str, Any]]:
    """Where ``task`` (ROLE:INDEX)'s attempts wrote their logs, oldest first: ``{task_id, agent,
    directory}`` (directory None when the agent was not asked in time: it is asked when read)."""
    return list(((rec.get("end") or {}).get("logs") or {}).get(task, []))


def when(at: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at)) if at else "-"


def duration(seconds: float | None) -> str:
    if seconds is None or seconds < 0:
        return "-"
    s = int(round(seconds))
    h, m = divmod(s, 3600)
    m, s = divmod(m, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s" if m else f"{s}s"


def _ended_at(rec: dict[str, Any]) -> float | None:
    return (rec.get("end") or {}).get("at")


def _took(rec: dict[str, Any]) -> float | None:
    at, started = _ended_at(rec), rec["job"].get("started_at")
    return at - started if at and started else None


def task_counts(rec: dict[str, Any]) -> str:
    """'4: 1 finished, 3 killed'"""
    states: dict[str, int] = {}
    for t in rec["job"].get("tasks", []):
        short = t.get("state", "").removeprefix("TASK_").lower() or "-"
        states[short] = states.get(short, 0) + 1
    return f"{sum(states.values())}: " + ", ".join(f"{n} {s}" for s, n in sorted(states.items(), key=lambda i: -i[1]))


def log_lines(rec: dict[str, Any], limit: int | None = None) -> list[str]:
    """'chief:0  127.0.0.1:5051  /work/slaves/S0/.../runs/C1' for each task's newest attempt."""
    logs = (rec.get("end") or {}).get("logs") or {}
    lines = []
    for task, attempts in logs.items():
        if attempts:
            a = attempts[-1]
            lines.append(f"{task:<12} {a.get('agent') or '-':<21} {a.get('directory') or '(asked of the agent when read)'}")
    if limit is not None and len(lines) > limit:
        lines = lines[:limit] + [f"... {len(lines) - limit} more (tfmesos status NAME lists them all)"]
    return lines


def mean_rate(series: list[list[Any]]) -> float | None:
    """Steps per second from the first point to the last (None without two points or steps made)."""
    if len(series) < 2 or series[-1][0] <= series[0][0] or series[-1][1] < series[0][1]:
        return None
    return (series[-1][1] - series[0][1]) / (series[-1][0] - series[0][0])


def snapshot_of(rec: dict[str, Any]) -> StatusSnapshot | None:
    """The /v1/status snapshot a kept record stands for (``status NAME --json`` prints the same
    shape whether the job runs or ended), or None for a record without its options (format 1)."""
    import dataclasses

    from ..core.job.job import Job
    from ..options.jobspec import job_spec_from_options
    from ..options.load import OptionsError, resolve_options

    if not rec.get("options"):
        return None
    try:
        snap = Job.from_dict(job_spec_from_options(resolve_options(rec["options"])), rec["job"]).snapshot()
    except (OptionsError, KeyError, ValueError, TypeError):
        return None
    at = (rec.get("end") or {}).get("at")
    return dataclasses.replace(snap, ended_at=at, now=at, connected=False) if at is not None else snap


def status_lines(rec: dict[str, Any], fallback_name: str = "") -> list[str]:
    """``tfmesos status`` of a job from its kept record (the scheduler is gone)."""
    job, end = rec["job"], rec.get("end") or {}
    name = name_of(rec, fallback_name)
    if ended(rec):
        head = [f"job {name}  {job.get('phase')}: {job.get('cause') or '-'}",
                f"  ended {when(end.get('at'))} after {duration(_took(rec))}  framework {rec.get('framework_id')}"
                f"  restarts {job.get('job_restarts', 0)}  (from its record: the scheduler is gone)"]
    else:
        head = [f"job {name}  phase {job.get('phase')}  framework {rec.get('framework_id')}  restarts "
                f"{job.get('job_restarts', 0)}",
                "  (its record as last saved: pass --api HOST:PORT, printed by 'tfmesos run', for the live status)"]
    lines = head
    if end.get("progress"):
        lines.append(f"  progress {progress_text('', Progress.from_json(end['progress'])).strip()}")
    rate = mean_rate(job.get("series") or [])
    if rate is not None:
        lines.append(f"  {rate:.3g} steps/s on average ({len(job['series'])} points kept for the chart)")
    lines += ["  " + task_row(t) for t in tasks_of(rec)]
    logs = log_lines(rec)
    if logs:
        lines.append(f"  logs (tfmesos logs {name} ROLE:INDEX, while the sandboxes exist):")
        lines += ["    " + line for line in logs]
    lines += [f"  event: {e}" for e in job.get("events", [])[-10:]]
    return lines


def running_lines(snaps: list[StatusSnapshot]) -> list[str]:
    """``tfmesos jobs``: the jobs running from this machine, a queued one with why and since when."""
    lines = []
    for snap in snaps:
        lines.append(f"{snap.name}  {phase_text(snap.phase, snap.queued)}  for {duration((snap.now or 0) - snap.started_at)}")
        if snap.queued:
            lines.append(f"    {snap.queued} (for {duration((snap.now or 0) - (snap.queued_since or 0))})")
    return lines


def logs_cell(rec: dict[str, Any], present: Callable[[dict[str, Any]], bool | None]) -> str:
    """Where a job's logs are, short: the agents with its sandboxes, or that they are gone (and
    whether the record kept their ends). ``present(attempt)``: True, False (gone), None (unknown)."""
    newest = [attempts[-1] for attempts in ((rec.get("end") or {}).get("logs") or {}).values() if attempts]
    if not newest:
        return "-"
    there = sorted({a.get("agent") or "?" for a in newest if present(a) is not False})
    if there:
        return "sandboxes on " + ", ".join(there[:2]) + (f" and {len(there) - 2} more" if len(there) > 2 else "")
    return "sandboxes gone; the record kept their ends" if any(a.get("tail") for a in newest) else "sandboxes gone"


def jobs_lines(recs: list[dict[str, Any]], present: Callable[[dict[str, Any]], bool | None] = lambda a: None
               ) -> list[str]:
    """``tfmesos jobs``: the kept ends, newest first, a line each (``tfmesos status NAME`` has the
    details, ``tfmesos logs NAME ROLE:INDEX`` the logs)."""
    if not recs:
        return []
    rows = [("NAME", "END", "WHEN", "DURATION", "TASKS", "LOGS")]
    for rec in recs:
        rows.append((name_of(rec, "?"), rec["job"].get("phase", "?"), when(_ended_at(rec)), duration(_took(rec)),
                     task_counts(rec), logs_cell(rec, present)))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + row[5] for row in rows]


def newest_first(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(recs, key=lambda r: _ended_at(r) or 0, reverse=True)


def same_address(a: str | None, b: str | None) -> bool:
    """Whether two HOST:PORT name the same API (localhost and 127.0.0.1 alike)."""
    if not a or not b:
        return False
    loopback = ("127.0.0.1", "localhost", "0.0.0.0", "::1")
    (ha, _, pa), (hb, _, pb) = a.rpartition(":"), b.rpartition(":")
    return pa == pb and (ha == hb or (ha in loopback and hb in loopback))


def _clock(at: float | None) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at)) if at else "?"


def gone_lines(gone: dict[str, Any], now: float) -> list[str]:
    """``tfmesos status NAME`` of a run whose scheduler is gone without a word: its live marker
    (store/name_claim.py's ``Holder`` as JSON) says who it was and the job's last state known."""
    last = gone.get("last") or {}
    name, pid = gone.get("name") or "?", gone.get("pid")
    where = f" on {gone['host']}" if gone.get("host") and not gone.get("on_this_host", True) else ""
    lines = [f"job {name}  GONE: its scheduler (pid {pid}{where}, started {when(gone.get('since'))}) has ended "
             "without a word (killed: kill -9, the OOM killer?)"]
    if last:
        tasks = ", ".join(f"{n} {s.removeprefix('TASK_').lower()}" for s, n in sorted(
            (last.get("tasks") or {}).items(), key=lambda i: -i[1]))
        lines.append(f"  last known {_clock(last.get('at'))} ({duration(now - last['at']) if last.get('at') else '?'} ago): "
                     f"phase {last.get('phase', '?')}" + (f" ({last['cause']})" if last.get("cause") else "")
                     + f", tasks {sum((last.get('tasks') or {}).values())}: {tasks or '-'}, "
                     f"restarts {last.get('job_restarts', 0)}, framework {last.get('framework_id') or '-'}")
        if last.get("queued"):
            lines.append(f"  {last['queued']}")
        if last.get("progress"):
            lines.append(f"  progress {progress_text('', Progress.from_json(last['progress'])).strip()}")
        lines += [f"  event: {e}" for e in last.get("events") or []]
    else:
        lines.append("  its last state is not known (it was gone before it said one)")
    if gone.get("master") == "embedded":
        lines.append("  its embedded master went with it: its executors end their tasks within seconds")
    elif gone.get("master"):
        lines.append(f"  its tasks run on at {gone['master']} until the framework's failover timeout: the same "
                     "'tfmesos run' (with its --state-dir or --zk) resumes the job")
    return lines


def gone_row(gone: dict[str, Any], now: float) -> str:
    """``tfmesos jobs``: a run whose scheduler is gone, in a line."""
    last = gone.get("last") or {}
    known = f"last known {last.get('phase', '?')} {duration(now - last['at'])} ago" if last.get("at") else "last state unknown"
    return f"{gone.get('name')}  GONE (scheduler pid {gone.get('pid')} ended without a word)  {known}"
