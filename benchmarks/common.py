"""Shared pieces of the benchmarks: timestamped scheduler runs, sandbox files, statistics.

Processes are the real ones: ``tfmesos run`` (through ``benchmarks.stamped``, which only adds
wall-clock stamps to its stdout), ``tfmesos local-master`` and the task processes the
embedded agents start. The e2e test harness (``tests/e2e/harness.py``) provides the process
plumbing (``LineProcess``, ``LocalMaster``, ``find_task_process``, ``write_options``, ``wait_gone``).
"""
from __future__ import annotations

import contextlib
import glob
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import psutil

from tests.e2e.harness import ROOT, LineProcess, wait_gone, write_options

PSS = ROOT / "examples" / "pss_digits" / "options.json"
PYTHON = sys.executable
STAMPED = [PYTHON, "-m", "benchmarks.stamped"]

# Offered ports of the embedded master in the benchmarks' scheduler runs (see benchmarks/stamped.py):
# below the kernel's ephemeral range and away from the 31000-32999 that concurrent test runs use.
FIRST_PORT = 24000

_STAMP = re.compile(r"^(\d+\.\d+) (.*)$")


class BenchError(RuntimeError):
    """A run did not go as the benchmark expects (it is recorded, and the run is retried or skipped)."""


class StampedRun(LineProcess):
    """``tfmesos ARGS`` whose stdout lines carry the wall-clock time they were written at."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None, first_port: int | None = FIRST_PORT,
                 pin: set[int] | None = None):
        env = dict(os.environ if env is None else env)
        if first_port:
            env["BENCH_FIRST_PORT"] = str(first_port)
        self.started_at = time.time()
        # taskset execs the command: the pid stays the scheduler's, and every descendant inherits the CPUs.
        prefix = ["taskset", "-c", ",".join(map(str, sorted(pin)))] if pin else []
        super().__init__(prefix + STAMPED + args, env=env)

    def find(self, pattern: str, timeout: float, start: int = 0) -> tuple[int, float, re.Match]:
        """The first line at index >= start whose text matches: (index, stamp, match); waits for it."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        seen = start
        with self._cond:
            while True:
                for i in range(seen, len(self.lines)):
                    m = _STAMP.match(self.lines[i])
                    if m:
                        found = rx.search(m.group(2))
                        if found:
                            return i, float(m.group(1)), found
                seen = max(seen, len(self.lines))
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._reader.is_alive()):
                    tail = "\n".join(self.lines[-40:])
                    raise BenchError(f"no line matching {pattern!r} within {timeout:.0f}s; last lines:\n{tail}")
                self._cond.wait(min(left, 1.0))

    def all(self, pattern: str, start: int = 0, end: int | None = None) -> list[tuple[int, float, re.Match]]:
        """Every line with start <= index < end whose text matches: (index, stamp, match)."""
        rx = re.compile(pattern)
        out = []
        with self._cond:
            lines = self.lines[start:end]
        for i, line in enumerate(lines, start):
            m = _STAMP.match(line)
            if m:
                found = rx.search(m.group(2))
                if found:
                    out.append((i, float(m.group(1)), found))
        return out

    def failed(self, key: str, start: int = 0) -> str | None:
        """Why waiting for ``key`` (role:index) is pointless: it ended, or the scheduler did."""
        hits = self.all(rf"\] {key} TASK_(FAILED|KILLED|LOST|ERROR|DROPPED|GONE)", start)
        if hits:
            i = hits[0][0]
            return f"{key} ended: " + self.lines[i]
        if self.proc.poll() is not None:
            return f"the scheduler exited ({self.proc.returncode}):\n" + "\n".join(self.lines[-30:])
        return None

    def rusage(self) -> dict[str, float]:
        hits = self.all(r"@bench rusage user=(\S+) sys=(\S+)")
        if not hits:
            return {}
        m = hits[-1][2]
        return {"cpu_s": float(m.group(1)) + float(m.group(2))}

    def stop(self, timeout: float = 60.0) -> int | None:
        """SIGTERM (a local run kills its job and exits), then SIGKILL of the whole group."""
        if self.proc.poll() is None:
            self.kill(signal.SIGTERM)
        try:
            return self.wait(timeout)
        except subprocess.TimeoutExpired:
            self.killpg(signal.SIGKILL)
            return self.wait(10)


def sandbox_root(run: StampedRun, timeout: float = 30.0) -> Path:
    return Path(run.find(r"sandboxes under (\S+)", timeout)[2].group(1))


def sandbox_stdout(root: Path, task_id: str) -> Path | None:
    hits = glob.glob(str(root / "agents" / "*" / "frameworks" / "*" / "executors" / task_id / "runs" / "*" / "stdout"))
    hits = [h for h in hits if "/runs/latest/" not in h]
    return Path(hits[0]) if hits else None


def wait_sandbox_line(root: Path, task_id: str, pattern: str, timeout: float, poll: float = 0.1,
                      abort: Callable[[], str | None] | None = None) -> float:
    """When the task's process wrote a line matching ``pattern`` to its sandbox stdout: the file's mtime.

    The built-in TensorFlow server writes one stdout line when it serves and one more when it
    stops, so while it serves, the file's mtime is the time of the ``serving on`` line
    (exact, whatever the polling interval).
    """
    rx = re.compile(pattern)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        path = sandbox_stdout(root, task_id)
        if path is not None:
            try:
                if rx.search(path.read_text(errors="replace")):
                    return path.stat().st_mtime  # read first: the mtime is that of the line's write or later
            except OSError:
                pass
        why = abort() if abort else None
        if why:
            raise BenchError(f"{task_id}: {why}")
        time.sleep(poll)
    raise BenchError(f"{task_id}: no {pattern!r} in its sandbox stdout within {timeout:.0f}s")


def launched(run: StampedRun, start: int = 0) -> dict[str, dict[str, Any]]:
    """role:index -> {task_id, port, stamp} of the launches at line index >= start (the latest wins)."""
    out: dict[str, dict[str, Any]] = {}
    for i, ts, m in run.all(r"launch (\S+) as (\S+) on [^:]+:(\d+)"):
        if i >= start:
            out[m.group(1)] = {"task_id": m.group(2), "port": int(m.group(3)), "stamp": ts, "line": i}
    return out


def median(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def summary(values: Iterable[float | None]) -> dict[str, Any]:
    vals = [v for v in values if v is not None]
    if not vals:
        return {"median": None, "min": None, "max": None, "n": 0, "samples": []}
    return {"median": statistics.median(vals), "min": min(vals), "max": max(vals), "n": len(vals),
            "samples": [round(v, 4) for v in vals]}


def rss_mib(pid: int) -> dict[str, float] | None:
    try:
        p = psutil.Process(pid)
        full = p.memory_full_info()
        return {"rss_mib": full.rss / 2**20, "uss_mib": full.uss / 2**20}
    except psutil.Error:
        return None


def job_options(path: Path, name: str, env: list[str], **overrides: Any) -> Path:
    """The main example's options with another service name and extra job environment."""
    base = json.loads(PSS.read_text())
    job = dict(overrides.pop("job", {}))
    job["env"] = list(base.get("job", {}).get("env", [])) + env
    return write_options(path, PSS, service={"name": name}, job=job, **overrides)


def api_post(address: str, path: str) -> None:
    req = urllib.request.Request(f"http://{address}{path}", data=b"", method="POST")
    with urllib.request.urlopen(req, timeout=10) as resp:
        resp.read()


def ensure_gone(service: str, timeout: float = 30.0) -> list[int]:
    """Processes of the job still alive after ``timeout``: SIGKILLed, and their pids returned."""
    left = wait_gone(service, timeout)
    for p in left:
        try:
            p.kill()
        except psutil.Error:
            pass
    return [p.pid for p in left]


def environment() -> dict[str, Any]:
    import platform

    info: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "cpu_count": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "mem_total_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }
    from importlib import metadata

    for dist in ("tensorflow-cpu", "tensorflow", "pymesos", "keras", "psutil"):
        try:
            info[dist.replace("-", "_") + "_version"] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    if "tensorflow_version" not in info and "tensorflow_cpu_version" in info:
        info["tensorflow_version"] = info["tensorflow_cpu_version"]
    try:
        info["git_commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                            text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return info


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or "unknown"


def log(text: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


class CpuMonitor:
    """CPU seconds (user + system) used by process trees, sampled every ``interval`` seconds, with
    the machine's busy CPU seconds (all processes, other people's included) and the roots' peak RSS.

    A process that exits keeps the CPU time it had at its last sample. ``at(t)`` interpolates the
    trees' total between the samples around wall-clock time ``t``; ``foreign_cores(t0, t1)`` is the
    average number of cores that processes outside the trees kept busy between ``t0`` and ``t1``.
    One scan of the process table per sample keeps the monitor's own cost to well under 1% of a core.
    """

    def __init__(self, roots: Callable[[], list[int]], interval: float = 0.5, trees: bool = True):
        """``trees=False``: the roots alone, without scanning the process table (a big gang's
        thousands of processes made each scan ~50 ms of CPU on the 2 cores the gang runs on)."""
        self._roots = roots
        self._interval = interval
        self._trees = trees
        self._last: dict[int, float] = {}
        self.series: list[tuple[float, float, float]] = []  # (time, trees' CPU s, machine busy CPU s)
        self.peak_rss: dict[int, int] = {}
        self.cmdlines: dict[int, str] = {}
        self.by_pid: list[tuple[float, dict[int, float]]] = []  # (time, CPU s of every pid seen so far)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    @staticmethod
    def _busy() -> float:
        t = psutil.cpu_times()
        return sum(t) - t.idle - getattr(t, "iowait", 0.0) - getattr(t, "guest", 0.0) - getattr(t, "guest_nice", 0.0)

    def _sample(self) -> None:
        children: dict[int, list[psutil.Process]] = {}
        for p in psutil.process_iter(["ppid"]) if self._trees else ():
            children.setdefault(p.info["ppid"], []).append(p)
        roots = self._roots()
        todo = []
        for pid in roots:
            try:
                todo.append(psutil.Process(pid))
            except psutil.Error:
                pass
        seen: set[int] = set()
        while todo:
            p = todo.pop()
            if p.pid in seen:
                continue
            seen.add(p.pid)
            try:
                t = p.cpu_times()
                self._last[p.pid] = t.user + t.system
                if p.pid not in self.cmdlines:
                    self.cmdlines[p.pid] = " ".join(p.cmdline())
                if p.pid in roots:
                    self.peak_rss[p.pid] = max(self.peak_rss.get(p.pid, 0), p.memory_info().rss)
            except psutil.Error:
                continue
            todo.extend(children.get(p.pid, ()))
        now = time.time()
        self.series.append((now, sum(self._last.values()), self._busy()))
        self.by_pid.append((now, dict(self._last)))

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._sample()
            except psutil.Error:
                pass
            self._stop.wait(self._interval)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _interp(self, t: float, column: int) -> float | None:
        s = self.series
        if not s or t < s[0][0] or t > s[-1][0]:
            return None
        for a, b in zip(s, s[1:]):
            if a[0] <= t <= b[0]:
                frac = (t - a[0]) / (b[0] - a[0]) if b[0] > a[0] else 0.0
                return a[column] + (b[column] - a[column]) * frac
        return s[-1][column]

    def at(self, t: float) -> float | None:
        return self._interp(t, 1)

    def cpu_of(self, t0: float, t1: float, select: Callable[[int, str], bool]) -> float | None:
        """CPU seconds the selected processes (by pid and command line) used between two samples
        nearest to ``t0`` and ``t1``."""
        if not self.by_pid:
            return None
        a = min(self.by_pid, key=lambda s: abs(s[0] - t0))[1]
        b = min(self.by_pid, key=lambda s: abs(s[0] - t1))[1]
        return sum(cpu - a.get(pid, 0.0) for pid, cpu in b.items() if select(pid, self.cmdlines.get(pid, "")))

    def foreign_cores(self, t0: float, t1: float) -> float | None:
        t0 = max(t0, self.series[0][0]) if self.series else t0
        mine0, mine1 = self._interp(t0, 1), self._interp(t1, 1)
        busy0, busy1 = self._interp(t0, 2), self._interp(t1, 2)
        if None in (mine0, mine1, busy0, busy1) or t1 <= t0:
            return None
        return max(0.0, (busy1 - busy0) - (mine1 - mine0)) / (t1 - t0)

    def peak_rss_mib(self, pid: int) -> float | None:
        return self.peak_rss[pid] / 2**20 if pid in self.peak_rss else None


@contextlib.contextmanager
def pinned(cpus: set[int] | None) -> Iterator[None]:
    """Processes started inside run on ``cpus`` only (what ``taskset -c`` does: the affinity is
    inherited by every descendant, so a whole job stays on them); None: no change."""
    if not cpus:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def process_start_wall(pid: int) -> float | None:
    """Wall-clock time a process started, to the kernel's 10 ms tick: its start in ticks since
    boot (/proc/PID/stat) against CLOCK_BOOTTIME now (psutil's create_time rounds boot time to
    whole seconds)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22, starttime
    return time.time() - (time.clock_gettime(time.CLOCK_BOOTTIME) - started)


def record(key: str, result: dict[str, Any], measured: str, path: Path = ROOT / "benchmarks" / "results.json") -> None:
    """Put ``result`` into the results file under ``key`` (a part measured on its own, outside
    ``make bench``), saying when and what in ``measured``; what was there goes under "previous"
    (its own "previous" dropped: one step of history)."""
    results = json.loads(path.read_text()) if path.exists() else {}
    before = results.get(key)
    if isinstance(before, dict):
        before = {k: v for k, v in before.items() if k not in ("previous", "samples")}
    results[key] = {**result, "measured": measured, **({"previous": before} if before else {})}
    path.write_text(json.dumps(results, indent=1) + "\n")
