"""The tfmesos executor: one per task, started by the Mesos agent as ``python -m tfmesos.executor``.

Once its task arrives it takes the ClusterSpec a small gang's TaskInfo carries, or else asks the
scheduler for it (a framework message; asked again until the answer comes, since messages are best
effort: a big gang's TaskInfo does not carry it), then starts the task's process with TF_CONFIG
and reports TASK_RUNNING. The process's output goes to the sandbox; the chief's is also forwarded
to the scheduler. Exit 0 is TASK_FINISHED, anything else TASK_FAILED with the exit code (128+N for
signal N, as shells report it) and the last log lines; KILL stops the whole process group
(SIGTERM, then SIGKILL after a grace period).

A KILL is a stop the task is told of first (docs/developers/architecture.md, "Planned stop: the
notice"): TASK_KILLING (to a framework with TASK_KILLING_STATE), the notice file written
(``TFMESOS_NOTICE_FILE``: the scheduler's reason when a ``StopNotice`` came first, else the
agent's own KILL, a drain's; none after a plain stop's ``StopNotice``, kind ""), SIGTERM, and SIGKILL after the grace: the KILL's kill policy (a
drain's ``max_grace_period`` caps it), else the TaskInfo's (the job's stop grace), or after a plain
stop KILL_GRACE_SECONDS, as before. A second KILL
sends SIGTERM again: a server that serves on after the notice (tfserver) then stops.

Nothing of the task outlives the executor: the task runs in a process group of its own (its
children too, unless they leave it), and before the executor exits, whatever is left of that group
(a child the task left behind, a grandchild under ``sh -c`` that catches SIGTERM) gets SIGTERM and,
after the kill's grace period, SIGKILL. SIGTERM to the executor itself (its container destroyed,
the agent stopping) kills the task as a KILL does, and the executor ends with it.
"""
from __future__ import annotations

import collections
import json
import os
import stat
import sys
import threading
import time

from ..mesos.executor_driver import RecoveringExecutorDriver, log, parse_duration  # noqa: F401 (parse_duration: tests)

# A cold executor imports only what it needs to subscribe (the agent starts one per task, and
# its CPU is a big gang's bring-up): the messages, the ClusterSpec code and the report pipe are
# imported when the task arrives, subprocess only where os.posix_spawn cannot start the task
# (SpawnedTask). ``tfmesos.executor.preload`` lists them for a warm interpreter that forks
# executors (the embedded agent's fork server).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any

    from ..core.task_key import TaskKey
    from ..mesos.messages import Message, TaskPayload
    from .report_pipe import ReportPipe

# Set in the executor's environment (a job.python wrapper can): the ClusterSpec a small gang's
# TaskInfo carries is left unread and asked for, as an executor of protocol 4 before it did. For
# tests of the ask path (tests/e2e/test_recovery.py): a gang that asks is otherwise 129+ tasks.
ASK_ENV = "TFMESOS_EXECUTOR_ASK_CLUSTERSPEC"
ASK_AGAIN_SECONDS = 10.0  # a 1,000-task gang on a loaded machine takes more than 5 s to answer: no wave of asks again
ASK_AGAIN_MAX_SECONDS = 30.0
KILL_GRACE_SECONDS = 3.0
LOG_TAIL_LINES = 20
# How much of a failed task's stderr file is read back for its traceback (a message holding a
# tensor dump runs to hundreds of lines); pumped output is read whole, as it passes.
TRACEBACK_SCAN_BYTES = 1 << 20
OUTPUT_BATCH_SECONDS = 0.3
GROUP_POLL_SECONDS = 0.05  # while what a task left behind gets its grace period (a few seconds at most)
# Once the task's process has ended, at most this long reading the lines it wrote before it ended
# (a pipe the task's leftovers hold open never ends: they are killed after the task's end is reported).
DRAIN_SECONDS = 0.5


_PRCTL: Any = None  # libc's prctl, looked up in the executor: the forked child only calls it


def _die_with_parent() -> None:
    """In the child: get SIGKILL if the executor dies (kill -9 included), so no orphan remains."""
    (_PRCTL or _prctl())(1, 9)  # PR_SET_PDEATHSIG, SIGKILL


def _runnable(program: str, env: dict[str, str]) -> bool:
    """Whether exec'ing ``program`` itself would work as the shell would run it: an absolute path
    or a name on the task's PATH (a relative path is left to the shell, in the task's cwd)."""
    if "/" in program:
        return os.path.isabs(program) and _executable(program)
    return _on_path(program, env.get("PATH", os.defpath)) is not None


def _executable(path: str) -> bool:
    return os.access(path, os.X_OK) and not os.path.isdir(path)


def _on_path(name: str, path: str) -> str | None:
    """Where ``name`` is found on ``path`` (shutil.which's answer; shutil is ~3 ms to import)."""
    for folder in path.split(os.pathsep):
        candidate = os.path.join(folder or os.curdir, name)
        if _executable(candidate):
            return candidate
    return None


def _pdeathsig_shim() -> list[str] | None:
    """util-linux's ``setpriv --pdeathsig KILL --``: sets what _die_with_parent sets, then execs the
    task (same pid), and lets Popen use vfork: a preexec_fn forces a fork() of the executor, whose
    copy-on-write faults cost ~3 ms per task. None where there is no setpriv.

    setpriv sets the signal after Popen has returned, and the signal follows the parent of that
    moment: an executor killed in between would leave the task running for good. So setpriv execs
    a shell that goes on (exec, same pid) only if its parent is still this executor."""
    path = _on_path("setpriv", os.environ.get("PATH", os.defpath))
    if not path:
        return None
    return [path, "--pdeathsig", "KILL", "--", "/bin/sh", "-c", f'[ "$PPID" = {os.getpid()} ] && exec "$@"', "sh"]


def _prctl() -> Any:
    global _PRCTL
    if _PRCTL is None:
        import ctypes

        _PRCTL = ctypes.CDLL("libc.so.6", use_errno=True).prctl
    return _PRCTL


# A command of plain words (no quoting, expansion, redirection, globbing, ...) whose first word is
# no shell builtin means the same to ``sh -c`` as an exec of those words, minus the shell's start.
# Words are separated by spaces alone (a tab or a newline is the shell's); read without a regex
# (each compiled pattern is ~0.25 ms of a cold executor).
_PLAIN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:,+@%=-")
_SHELL_WORDS = frozenset(
    ". : [ alias bg break cd command continue echo eval exec exit export false fg getopts hash jobs kill "
    "local printf pwd read readonly return set shift source test time times trap true type ulimit umask "
    "unalias unset wait".split())


def command_argv(command: str) -> list[str]:
    """How the task's command runs: ``/bin/sh -c COMMAND``, or its words exec'd directly where the
    shell would only have exec'd them (one process start less per task)."""
    words = [w for w in command.split(" ") if w]
    if len(words) > 1 and words[0] == "exec":
        words = words[1:]
    if words and all(_PLAIN_CHARS.issuperset(w) for w in words) and words[0] not in _SHELL_WORDS \
            and "=" not in words[0]:
        return words
    return ["/bin/sh", "-c", command]


def _output_files() -> list[tuple[str, int]]:
    """(a path to read it by, its size now) for stdout and stderr when both are regular files."""
    found = []
    for fd in (1, 2):
        try:
            info = os.fstat(fd)
        except OSError:
            return []
        if not stat.S_ISREG(info.st_mode):
            return []
        found.append((f"/proc/self/fd/{fd}", info.st_size))
    return found


def _last_lines(path: str, start: int, count: int, window: int = 16384) -> list[str]:
    """The last ``count`` lines written to ``path`` after ``start`` (from its last ``window`` bytes)."""
    try:
        with open(path, "rb") as f:
            end = f.seek(0, os.SEEK_END)
            f.seek(max(start, end - window))
            data = f.read()
    except OSError:
        return []
    return data.decode("utf-8", "replace").splitlines()[-count:]


SECRETS_ROOT = "/dev/shm"  # memory, as Mesos' volume/secret isolator keeps them (ramfs)


def write_secret_files(sandbox: str, files: dict[str, str], root: str = SECRETS_ROOT) -> str | None:
    """The job's env:/file: secrets as files the task reads at ``$MESOS_SANDBOX/PATH``: each is a
    link to a file (0600) in a directory of this executor's own (0700) outside the sandbox, in
    memory where there is /dev/shm. The agent's /files API and the web UI's sandbox browser refuse
    a link that leaves the sandbox (Mesos and the embedded agent alike), and the sandbox outlives
    the task (until garbage collection): the value is neither shown nor kept. The directory is
    returned for ``remove_secret_files`` once the task has ended; OSError names a path only."""
    if not files:
        return None
    import base64
    import tempfile

    sandbox = os.path.realpath(sandbox)
    private = tempfile.mkdtemp(prefix="tfmesos-secrets-", dir=root if os.access(root, os.W_OK | os.X_OK) else None)
    try:
        for path, data in files.items():
            link = os.path.join(sandbox, path)
            if os.path.commonpath([sandbox, os.path.realpath(link)]) != sandbox:
                raise OSError(f"secret file {path!r} is outside the sandbox")
            target = os.path.join(private, path)
            os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(base64.b64decode(data))
            os.makedirs(os.path.dirname(link), mode=0o700, exist_ok=True)
            os.symlink(target, link)
    except BaseException:
        remove_secret_files(private)
        raise
    return private


def remove_secret_files(private: str | None) -> None:
    if private:
        import shutil

        shutil.rmtree(private, ignore_errors=True)


def kill_grace(kill_policy: dict[str, Any] | None) -> float:
    """Seconds between SIGTERM and SIGKILL: a KillPolicy's grace period (the KILL's, else the
    TaskInfo's), as Mesos' own executors honour it; KILL_GRACE_SECONDS without one."""
    nanoseconds = ((kill_policy or {}).get("grace_period") or {}).get("nanoseconds")
    return KILL_GRACE_SECONDS if nanoseconds is None else max(0.0, int(nanoseconds) / 1e9)


def _status(task_id: str, state: str, message: str = "", data: dict | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"task_id": {"value": task_id}, "state": state}
    if message:
        status["message"] = message
    if data is not None:
        from ..mesos.messages import TaskResult, encode

        own = ("exit_code", "log_tail", "exception")
        status["data"] = encode(TaskResult(data.get("exit_code"), data.get("log_tail", ""),
                                           {k: v for k, v in data.items() if k not in own}, data.get("exception", "")))
    return status


def _here(cwd: str) -> bool:
    """Whether ``cwd`` is the executor's own working directory (the sandbox, unless the job sets a
    workdir). OSError where it does not exist, as Popen's would be."""
    return os.path.samestat(os.stat(cwd), os.stat("."))


class SpawnedTask:
    """The task's process started with ``os.posix_spawn``, as ``subprocess.Popen`` starts it with
    what TaskProcess gives it where the task writes the sandbox files itself and runs in the
    executor's working directory: stdin from /dev/null, a process group of its own, SIGPIPE and
    SIGXFSZ (which Python ignores) back to their defaults, no descriptor of the executor but
    0-2. Popen's other uses (a workdir, pumped output, a preexec_fn where there is no setpriv)
    stay Popen's: its import is ~12M instructions (~2 ms) of every cold executor otherwise.
    ``pid``, ``wait`` and ``poll`` are Popen's. One difference: glibc's posix_spawn leaves its two
    internal signals (32 and 33, below SIGRTMIN) ignored in the task, and glibc installs their
    handlers when it needs them (pthread_cancel, setuid in a threaded process), so only a program
    of another C library that uses those two raw numbers could tell."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        import signal

        actions: list[tuple[Any, ...]] = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)]
        for name in os.listdir("/proc/self/fd"):  # Popen's close_fds: what the executor inherited stays here
            fd = int(name)
            try:
                if fd > 2 and os.get_inheritable(fd):
                    actions.append((os.POSIX_SPAWN_CLOSE, fd))
            except OSError:  # the listing's own descriptor, closed by now
                pass
        self.returncode: int | None = None
        self.pid = os.posix_spawn(argv[0], argv, env, file_actions=actions, setpgroup=0,
                                  setsigdef=(signal.SIGPIPE, signal.SIGXFSZ))

    def wait(self) -> int:
        """The exit code once the process has ended: -N for signal N, as Popen's."""
        while self.returncode is None:
            self.poll(0)
        return self.returncode

    def poll(self, options: int = os.WNOHANG) -> int | None:
        """The exit code if the process has ended, else None (Popen's)."""
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, options)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


class TaskProcess:
    """The task's OS process and its log tail.

    Its output goes straight to the executor's own stdout and stderr when those are files (the
    sandbox's, as Mesos and the embedded agent give them): no thread and no Python per line, and
    the tail is read back from the files at the end. Output that is forwarded to the scheduler
    (``forward``), or destined for pipes (a container logger), is pumped line by line instead."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: str, forward: Any | None):
        self.tail: collections.deque[str] = collections.deque(maxlen=LOG_TAIL_LINES)
        self._forward = forward
        self._files = [] if forward is not None else _output_files()
        self._tracebacks: Any = None  # of pumped stderr (files are read back at the end instead)
        if not self._files:
            from ..core.tensorflow.tracebacks import TracebackReader  # its regexes: only where output is pumped

            self._tracebacks = TracebackReader()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()  # nothing of the executor's own after the task's lines
        self._pumps: list[threading.Thread] = []
        shim = _pdeathsig_shim()
        if shim is not None and self._files and _here(cwd):
            self.proc: Any = SpawnedTask([*shim, *argv], env)  # the usual case: no subprocess import (~2 ms)
            return
        import subprocess

        piped = subprocess.PIPE if not self._files else None
        if shim is None:
            _prctl()
        self.proc = subprocess.Popen(
            [*shim, *argv] if shim else argv,
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=piped,
            stderr=piped,
            process_group=0,  # its own group, so a kill reaches its children too
            preexec_fn=None if shim else _die_with_parent,
        )
        if not self._files:
            self._pumps = [
                threading.Thread(target=self._pump, args=(self.proc.stdout, sys.stdout, "stdout"), daemon=True),
                threading.Thread(target=self._pump, args=(self.proc.stderr, sys.stderr, "stderr"), daemon=True),
            ]
        for t in self._pumps:
            t.start()

    def _pump(self, src: IO[bytes], dst: IO[str], stream: str) -> None:
        for raw in iter(src.readline, b""):
            line = raw.decode("utf-8", "replace")
            dst.write(line)
            dst.flush()
            self.tail.append(line.rstrip("\n"))
            if stream == "stderr":
                self._tracebacks.feed(line)
            if self._forward is not None:
                self._forward(stream, line.rstrip("\n"))

    def log_tail(self) -> str:
        """The last lines of the task's output (stdout's, then stderr's: errors come last)."""
        if not self._files:
            return "\n".join(self.tail)
        out, err = (_last_lines(path, offset, LOG_TAIL_LINES) for path, offset in self._files)
        return "\n".join((out + err)[-LOG_TAIL_LINES:])

    def exception(self) -> str:
        """The exception line of the last Python traceback on the task's stderr ("" if none)."""
        if not self._files:
            return self._tracebacks.line
        from ..core.tensorflow.tracebacks import exception_line

        path, offset = self._files[1]
        return exception_line(_last_lines(path, offset, sys.maxsize, TRACEBACK_SCAN_BYTES))

    def wait(self) -> int:
        """The task's exit status, once its process has ended and its last lines are read. Pumped
        output is read to the end of what the task wrote, not to the pipes' end: a process the task
        left behind (killed by ``clear_task_group``) may hold them open."""
        code = self.proc.wait()
        deadline = time.monotonic() + DRAIN_SECONDS
        for t in self._pumps:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        return code

    def signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass


OUTPUT_BATCH_LINES = 1000  # at most this many lines in one message; the rest are read back from OUTPUT_LOG


class OutputForwarder:
    """Batches output lines into framework messages (best effort, bounded), each saying where its
    first line starts in the sandbox's ``output.log``, which gets every line in the same order: a
    scheduler that missed messages (a master failover, its own restart) reads what it missed there."""

    def __init__(self, send: Any, task_id: str, log_path: str | None = None):
        self._send, self._task_id = send, task_id
        self._lines: list[str] = []
        self._offset = -1  # where the batch's first line starts in the log (-1: no log)
        self._log: IO[bytes] | None = None
        self._size = 0
        if log_path:
            try:
                self._log = open(log_path, "ab", buffering=0)  # unbuffered: what was forwarded is readable
                self._size = self._log.seek(0, os.SEEK_END)
            except OSError as exc:
                log.warning("cannot write %s (a scheduler that misses output cannot catch up): %s", log_path, exc)
        self._cond = threading.Condition()
        self._closed = False
        self._closing = threading.Event()  # cuts the batch's gathering short: the task has ended
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def __call__(self, stream: str, line: str) -> None:
        data = (line + "\n").encode("utf-8", "surrogateescape")
        with self._cond:
            if self._closed:  # a line of what the task left behind, after its end: not the task's
                return
            at = self._size
            if self._log is not None:
                try:
                    self._log.write(data)
                    self._size += len(data)
                except OSError:
                    self._log = None
            if len(self._lines) < OUTPUT_BATCH_LINES:
                if not self._lines:
                    self._offset = at if self._log is not None else -1
                self._lines.append(line)
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._lines and not self._closed:
                    self._cond.wait()
                if not self._lines and self._closed:
                    return
            self._closing.wait(OUTPUT_BATCH_SECONDS)  # gather a batch: one message per burst, not per line
            with self._cond:
                lines, self._lines = self._lines, []
                offset = self._offset
            from ..mesos.messages import OutputLines

            self._send(OutputLines(self._task_id, lines, offset))

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._closing.set()  # the last lines go at once (the task's end is reported after them)
        self._thread.join(timeout=5)
        if self._log is not None:
            self._log.close()


class TFExecutor:
    """The executor driver's callbacks (pymesos' Executor interface, duck-typed: called by name)."""

    def __init__(self) -> None:
        self.driver: Any = None
        self.task_id = ""
        self.kill_policy: dict[str, Any] | None = None  # the TaskInfo's, for a KILL without one
        self.payload: TaskPayload | None = None
        self.spec: dict[str, Any] | None = None
        self.process: TaskProcess | None = None
        self.forwarder: OutputForwarder | None = None
        self.killed = False
        self.kill_deadline: float | None = None  # time.monotonic() when the task's group gets SIGKILL
        self.terminated = False  # SIGTERM came: no waiting for the agent's acknowledgements
        self.finished = threading.Event()
        # main() runs the task in its own thread (``run_here``): it waits for ``wake``, set once the
        # task may start and once it is over. Otherwise (tests) the task gets a thread of its own.
        self.run_here = False
        self.wake = threading.Event()
        self.start_pending = False
        self._lock = threading.Lock()
        self._have_spec = threading.Event()
        self._agent_away = False
        self.secret_dir: str | None = None  # the task's secret files (write_secret_files), removed at its end
        self.killing_state = False  # the framework has TASK_KILLING_STATE: a KILL says TASK_KILLING first
        self.agent_host = ""
        self.stop_notice: tuple[str, str] | None = None  # (reason, kind) of the scheduler's StopNotice

    # -- the driver's callbacks
    def registered(self, driver: Any, executor_info: Any, framework_info: Any, agent_info: Any) -> None:
        self.driver = driver
        capabilities = (framework_info or {}).get("capabilities") or []
        self.killing_state = any(c.get("type") == "TASK_KILLING_STATE" for c in capabilities)
        self.agent_host = (agent_info or {}).get("hostname", "")
        # The task's start imports ~4 ms of CPU (the wire, the ClusterSpec code, the report pipe): made
        # while a busy agent sends the task (a second and more in a big gang's launch), not after
        # it arrives. After SUBSCRIBE, so the subscription waits for none of it.
        if _PRELOAD not in sys.modules:  # forked from a warm interpreter (the embedded agent's): all imported
            threading.Thread(target=_import_task_start, name="tfmesos-executor-imports", daemon=True).start()

    def reregistered(self, driver: Any, agent_info: Any) -> None:
        self._agent_away = False
        log.info("re-subscribed to the agent; the task goes on")

    def disconnected(self, driver: Any) -> None:
        # Called on every failed retry: said once. The driver re-subscribes (and gives up after
        # MESOS_RECOVERY_TIMEOUT, shutting us down).
        if not self._agent_away:
            self._agent_away = True
            log.warning("the agent is away; re-subscribing")

    def launchTask(self, driver: Any, task: dict[str, Any]) -> None:  # noqa: N802 (pymesos API)
        self.driver = driver
        self.task_id = task["task_id"]["value"]
        self.kill_policy = task.get("kill_policy")
        from ..mesos.messages import TaskPayload, decode

        try:
            payload = decode(task["data"], "the scheduler's TaskInfo")
            if not isinstance(payload, TaskPayload):
                raise ValueError(f"TaskInfo.data is a {payload.KIND} message, not a task")
        except ValueError as exc:  # ProtocolMismatch included: fail plainly, never misread
            # The result in this executor's protocol: a scheduler of another one reads that mismatch
            # from it and stops the job (a relaunch would meet the same executor).
            self._report("TASK_FAILED", f"tfmesos executor: {exc}", {"log_tail": str(exc)})
            return
        self.payload = payload
        spec = self._inline_spec(payload)
        if spec is not None:  # a small gang's: the task starts now
            self._take_spec(spec)
            return
        # The ClusterSpec is not in the TaskInfo: ask for it now (a framework message, no
        # TASK_STARTING: each update costs the agent a checkpoint and the scheduler an
        # acknowledgement, and RUNNING follows as soon as the answer is here).
        threading.Thread(target=self._ask_for_spec, name="tfmesos-executor-ask-spec", daemon=True).start()

    @staticmethod
    def _inline_spec(payload: TaskPayload) -> dict[str, Any] | None:
        """The ClusterSpec the TaskInfo carries (a small gang's), as an answer would give it; None:
        none there, or unreadable (then asked for), or ASK_ENV set."""
        carried = payload.cluster_spec()
        if carried is None:
            return None
        if os.environ.get(ASK_ENV):
            log.info("%s is set: the ClusterSpec in the TaskInfo is left, asking for it", ASK_ENV)
            return None
        try:
            spec = carried.document()
        except ValueError as exc:
            log.warning("%s: asking for the ClusterSpec", exc)
            return None
        log.note("took the ClusterSpec (version %d) in the TaskInfo", carried.version)  # no logging import for it
        return spec

    def frameworkMessage(self, driver: Any, data: str) -> None:  # noqa: N802
        from ..mesos.messages import ClusterSpecMessage, StopNotice, decode

        try:
            message = decode(data, "the scheduler")
            spec = None
            if isinstance(message, ClusterSpecMessage):
                spec = message.document()
        except ValueError as exc:  # another protocol: the task cannot be told its peers
            log.error("framework message refused: %s", exc)
            if self.process is None and not self.killed:
                self.killed = True
                self._report("TASK_FAILED", f"tfmesos executor: {exc}")
            return
        if spec is not None:
            self._take_spec(spec)
        elif isinstance(message, StopNotice):
            with self._lock:
                if self.stop_notice is not None or self.kill_deadline is not None:
                    return  # told already, or stopping: a notice is never taken back nor changed
                self.stop_notice = (message.reason, message.kind)
            if message.kind:  # "": a plain stop (no notice), so that the KILL after it is not taken for a drain's
                self._write_notice(None)

    def _take_spec(self, msg: dict[str, Any]) -> None:
        """Write the newest ClusterSpec to the sandbox; start the task on the first one."""
        with self._lock:
            if self.spec is not None and msg["version"] <= self.spec["version"]:
                return
            if self.payload is None:  # no task yet to start (the scheduler sends only when asked)
                return
            self.spec = msg
            sandbox = os.environ.get("MESOS_SANDBOX") or os.getcwd()
            tmp = os.path.join(sandbox, ".clusterspec.json.tmp")
            with open(tmp, "w") as f:
                f.write(json.dumps(msg))  # no indent: json's C encoder (a big gang's spec is long)
            os.replace(tmp, os.path.join(sandbox, "clusterspec.json"))  # atomic: a task never reads half
            start = self.process is None and not self.killed
        self._have_spec.set()
        if start and self.run_here:
            self.start_pending = True
            self.wake.set()
        elif start:
            threading.Thread(target=self._run_task, daemon=True).start()

    def killTask(self, driver: Any, task_id: dict[str, str],  # noqa: N802
                 kill_policy: dict[str, Any] | None = None) -> None:
        with self._lock:
            self.killed = True
            proc = self.process
        if proc is None:
            self._report("TASK_KILLED", "killed before it started")
            return
        import signal

        # A plain stop of the scheduler's (a StopNotice of kind "") keeps the short grace of
        # before: the TaskInfo's (the stop grace) is the time to save at a planned stop.
        plain = self.stop_notice is not None and not self.stop_notice[1]
        grace = kill_grace(kill_policy or (None if plain else self.kill_policy))
        deadline = time.monotonic() + grace
        with self._lock:
            first, sooner = self.kill_deadline is None, self.kill_deadline is None or deadline < self.kill_deadline
            if sooner:
                self.kill_deadline = deadline
        if first:
            if self.killing_state:
                self.driver.sendStatusUpdate(_status(self.task_id, "TASK_KILLING", f"stopping: SIGKILL in {grace:g} s"))
            if self.stop_notice is None or self.stop_notice[1]:  # not a plain stop
                self._write_notice(time.time() + grace)
        proc.signal_group(signal.SIGTERM)  # again on a second KILL: a server told to serve on stops
        if sooner:
            threading.Timer(grace, self._kill_by, args=(proc, deadline)).start()

    def _kill_by(self, proc: TaskProcess, deadline: float) -> None:
        """SIGKILL at the end of the grace, unless a later KILL brought it sooner (its own timer)."""
        import signal

        with self._lock:
            due = self.kill_deadline is not None and self.kill_deadline >= deadline - 1e-6
        if due:
            proc.signal_group(signal.SIGKILL)

    def _write_notice(self, deadline: float | None) -> None:
        """The task's notice file (the contract's executor side): the scheduler's reason when it
        sent one, else the agent's own KILL (a drain)."""
        from ..task import notice

        path = self._notice_path()
        reason, kind = self.stop_notice or (f"agent {self.agent_host or 'of this task'} draining", "drain")
        try:
            notice.write(path, notice.Notice(reason, kind, deadline))
        except OSError as exc:  # the task still gets SIGTERM and its grace
            log.warning("cannot write the notice file %s: %s", path, exc)

    @staticmethod
    def _notice_path() -> str:
        return os.path.join(os.environ.get("MESOS_SANDBOX") or os.getcwd(), "notice.json")

    def shutdown(self, driver: Any) -> None:
        if not self.task_id:  # no task yet: nothing to kill, the executor just ends
            self.finished.set()
            self.wake.set()
            return
        with self._lock:  # the framework or the agent goes away: a plain stop, the short grace
            self.stop_notice = self.stop_notice or ("the executor shuts down", "")
        self.killTask(driver, {"value": self.task_id})

    def terminate(self) -> None:
        """SIGTERM to the executor (see ``_on_sigterm``): its task killed as by a KILL."""
        self.terminated = True
        self.shutdown(self.driver)

    def clear_task_group(self) -> None:
        """Before the executor exits: nothing left of the task's process group. What is left gets
        SIGTERM (unless a kill sent it), and SIGKILL once the kill's grace period is over."""
        proc = self.process
        if proc is None or not _group_alive(proc.proc.pid):
            return
        import signal

        with self._lock:
            if self.kill_deadline is None:  # leftovers of a task that ended: the short grace
                self.kill_deadline = time.monotonic() + kill_grace(None)
                proc.signal_group(signal.SIGTERM)
            deadline = self.kill_deadline
        while _group_alive(proc.proc.pid) and time.monotonic() < deadline:
            time.sleep(GROUP_POLL_SECONDS)
        proc.signal_group(signal.SIGKILL)

    def error(self, driver: Any, message: str) -> None:
        log.error("executor error from agent: %s", message)

    # -- internals
    def _ask_for_spec(self) -> None:
        """Ask for the ClusterSpec until it is here: at once, then every ASK_AGAIN_SECONDS (the
        ask or the answer may be lost: framework messages are best effort), doubling up to
        ASK_AGAIN_MAX_SECONDS (a busy scheduler answering a big gang is not asked a dozen times)."""
        from ..mesos.messages import NeedSpec, encode

        wait = ASK_AGAIN_SECONDS
        while not self._have_spec.is_set() and not self.killed:
            try:
                self.driver.sendFrameworkMessage(encode(NeedSpec(self.task_id)))
            except Exception as exc:  # disconnected: try again later
                log.warning("cannot ask for the ClusterSpec yet: %s", exc)
            if self._have_spec.wait(wait) or self.killed:
                return
            log.info("no ClusterSpec %g s after asking for it: asking again", wait)
            wait = min(wait * 2, ASK_AGAIN_MAX_SECONDS)

    def _send_message(self, msg: Message) -> None:
        from ..mesos.messages import encode

        try:
            self.driver.sendFrameworkMessage(encode(msg))
        except Exception as exc:
            log.debug("output not forwarded: %s", exc)

    def _environment(self, key: TaskKey, cluster: dict[str, list[str]], sandbox: str) -> dict[str, str]:
        from ..core.tensorflow.clusterspec import ROLE_ENV, hosts_env, tf_config
        from .report_pipe import REPORT_ENV

        env = dict(os.environ)
        tmp = os.path.join(sandbox, "tmp")
        os.makedirs(tmp, exist_ok=True)
        p = self.payload
        assert p is not None
        env.update(
            {
                "TF_CONFIG": json.dumps(tf_config(cluster, key)),
                ROLE_ENV: key.role,
                "TFMESOS_TASK_INDEX": str(key.index),
                "TFMESOS_PORT": str(p.port),
                "TFMESOS_RESTART_COUNT": str(p.restarts),
                "TFMESOS_CHECKPOINT_DIR": p.checkpoint_dir or "",
                "TFMESOS_PYTHON": p.python,
                "TFMESOS_SERVICE": p.service,
                # Rewritten when the scheduler broadcasts a newer ClusterSpec (a peer moved).
                "TFMESOS_CLUSTERSPEC_FILE": os.path.join(sandbox, "clusterspec.json"),
                "TMPDIR": tmp,
                REPORT_ENV: os.path.join(sandbox, "progress.fifo"),  # tfmesos.report() writes here
                "PYTHONUNBUFFERED": "1",
                **hosts_env(cluster),
            }
        )
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        from ..task.notice import task_env

        env.update(task_env(self._notice_path(), p.env or {}))  # the job's own values win
        env.update(p.env or {})
        env.update(p.secret_env)
        return env

    def _say_keras_problem(self, env: dict[str, str], python: str) -> None:
        """A Keras that cannot run model.fit under the strategies, said in the task's log (and
        the streamed output) before the script's own lines: the executor runs on the task's Python."""
        from ..task.keras_check import problem_here

        line = problem_here(env, python)
        if line:
            print(f"tfmesos: warning: {line}", file=sys.stderr, flush=True)
            if self.forwarder:
                self.forwarder("stderr", f"tfmesos: warning: {line}")

    def _run_task(self) -> None:
        from ..core.tensorflow.clusterspec import substitute_placeholders
        from ..core.task_key import TaskKey  # not core.spec: the job's whole spec and profile, never used here
        from .report_pipe import PROGRESS_FILE, ReportPipe, progress_message

        assert self.spec is not None
        p = self.payload
        assert p is not None
        key = TaskKey(p.role, p.index)
        cluster = self.spec["cluster"]
        sandbox = os.environ.get("MESOS_SANDBOX") or os.getcwd()
        command = None if p.command is None else substitute_placeholders(p.command, cluster, key)
        argv = [p.python, "-m", "tfmesos.task.tfserver"] if command is None else command_argv(command)
        cwd = p.workdir or sandbox
        if p.stream_output:
            from ..mesos.messages import OUTPUT_LOG

            self.forwarder = OutputForwarder(self._send_message, self.task_id, os.path.join(sandbox, OUTPUT_LOG))
        watch = self.run_here  # this thread waits for the exit and the reports at once
        reports = ReportPipe(os.path.join(sandbox, "progress.fifo"),
                             lambda values: self._send_message(progress_message(self.task_id, values)), threaded=not watch,
                             keep=os.path.join(sandbox, PROGRESS_FILE) if p.stream_output else None)
        try:
            with self._lock:
                if self.killed:
                    reports.close()
                    return
                env = self._environment(key, cluster, sandbox)
                self.secret_dir = write_secret_files(sandbox, p.secret_files)
                if command is not None:
                    self._say_keras_problem(env, p.python)
                if command is not None and not _runnable(argv[0], env):
                    # Not found or not executable: the shell's own message and exit code say so.
                    argv = ["/bin/sh", "-c", command]
                self.process = TaskProcess(argv, env, cwd, self.forwarder)
        except OSError as exc:
            reports.close()
            self._report("TASK_FAILED", f"cannot start the task: {exc}", {"exit_code": 127, "log_tail": str(exc)})
            return
        self.driver.sendStatusUpdate(_status(self.task_id, "TASK_RUNNING", f"pid {self.process.proc.pid}"))
        if watch and not _serve_until_exit(self.process.proc.pid, reports):
            reports.read_in_thread()  # no pidfds here: wait() blocks, a thread reads the reports
        code = self.process.wait()
        remove_secret_files(self.secret_dir)
        reports.close()  # the last values go out before the task's end is reported
        if self.forwarder:
            self.forwarder.close()
        exit_code = code if code >= 0 else 128 - code
        tail = self.process.log_tail()
        data: dict[str, Any] = {"exit_code": exit_code, "log_tail": tail}
        if code > 0 and not self.killed:  # a Python task's uncaught exception exits 1
            data["exception"] = self.process.exception()
        if self.killed:
            self._report("TASK_KILLED", f"killed (exit code {exit_code})", data)
        elif code == 0:
            self._report("TASK_FINISHED", "exit code 0", data)
        else:
            import signal

            how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
            self._report("TASK_FAILED", f"process ended with {how}", data)

    def _report(self, state: str, message: str, data: dict | None = None) -> None:
        try:
            self.driver.sendStatusUpdate(_status(self.task_id, state, message, data))
        finally:
            self.finished.set()
            self.wake.set()

    def serve(self, driver: Any) -> None:
        """main()'s thread: run the task when it may start; return once it has ended and been
        reported, or the driver stopped (the agent told us to shut down, or gave up)."""
        self.run_here = True
        while not self.finished.is_set():
            if self.wake.wait(1.0):
                self.wake.clear()
            if self.start_pending:
                self.start_pending = False
                try:
                    self._run_task()
                except Exception as exc:  # noqa: BLE001 - e.g. the end not reported: the driver stopped
                    log.warning("the task's end was not reported: %s: %s", type(exc).__name__, exc)
                    return
            elif not driver.running:
                break


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _serve_until_exit(pid: int, reports: ReportPipe) -> bool:
    """Wait for process ``pid`` to exit (it stays unreaped), forwarding reports meanwhile; False
    where the kernel (or a seccomp profile) offers no pidfds."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return False
    import selectors

    try:
        with selectors.DefaultSelector() as selector:
            selector.register(pidfd, selectors.EVENT_READ)
            selector.register(reports.fileno(), selectors.EVENT_READ)
            while True:
                ready = {key.fd for key, _ in selector.select()}
                if reports.fileno() in ready and not reports.read_ready():
                    selector.unregister(reports.fileno())
                if pidfd in ready:
                    return True
    finally:
        os.close(pidfd)


def _on_sigterm(act: Any) -> None:
    """``act()`` on a thread of its own at each SIGTERM. The handler itself does nothing: Python's
    C handler writes the signal's number to the wakeup fd, which that thread reads (a handler that
    took a lock could meet the main thread holding it)."""
    import signal

    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    signal.signal(signal.SIGTERM, lambda signum, frame: None)

    def watch() -> None:
        while True:
            if os.read(read_end, 1)[0] == signal.SIGTERM:
                act()

    threading.Thread(target=watch, name="tfmesos-executor-sigterm", daemon=True).start()


_PRELOAD = "tfmesos.executor.preload"  # what a warm interpreter imports before forking executors


def _import_task_start() -> None:
    """Import what ``launchTask`` and ``_run_task`` import (a no-op in a forked, preloaded executor)."""
    try:
        from ..core.tensorflow import clusterspec  # noqa: F401
        from ..core import task_key  # noqa: F401
        from ..mesos import messages  # noqa: F401
        from ..task import keras_check, notice  # noqa: F401
        from . import report_pipe  # noqa: F401
    except Exception:  # noqa: BLE001 - the task's own import says what is wrong, where it is needed
        pass


def main() -> int:
    log.configure(level="INFO", format="%(asctime)s tfmesos.executor %(levelname)s %(message)s")
    # The driver reads MESOS_CHECKPOINT with bool(), as pymesos' did, so "0" would mean
    # "checkpointing" and make the executor outlive its agent; an empty value means what "0" should.
    if os.environ.get("MESOS_CHECKPOINT") == "0":
        os.environ["MESOS_CHECKPOINT"] = ""
    executor = TFExecutor()
    driver = RecoveringExecutorDriver(executor)
    executor.driver = driver
    _on_sigterm(executor.terminate)
    driver.start()
    try:
        executor.serve(driver)  # one task per executor: once it has ended and been reported, we are done
    finally:
        remove_secret_files(executor.secret_dir)  # also when the driver stopped first
        executor.clear_task_group()  # nothing of the task outlives us (also when the driver stopped first)
    if not executor.terminated:
        driver.wait_acknowledged()  # the agent holds the task's last update (or we gave up on the agent)
    driver.stop()
    return 1 if driver.failed else 0


if __name__ == "__main__":
    sys.exit(main())
