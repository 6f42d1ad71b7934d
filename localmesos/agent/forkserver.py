"""Start Python executors by forking a warm interpreter instead of exec'ing a new one.

A ``python -m tfmesos.executor`` costs 80-110 ms of CPU before it can subscribe: about
25 ms of interpreter start and 40-60 ms of imports (pymesos pulls in http.client, email,
ssl). On a 2-core machine that alone floors a 100-task gang at ~4 s. The zygote
(``zygote.py``, a child of the master) has those modules imported once and forks a child
per executor; the child is what exec'ing would have given (own process group, sandbox cwd,
environment, output files) for ~2 ms of CPU.

Only commands that are exactly ``[exec] PYTHON -m MODULE [ARGS]`` (shell words, no shell
syntax) for the master's own interpreter and a preloaded MODULE are forked, and only when
the command's environment matches the zygote's in everything Python reads at start-up
(PYTHON*, HOME, LANG, LC_*): anything else is exec'd as before. Real Mesos has no such
thing; the executor cannot tell the difference (it subscribes over HTTP either way).

The zygote reaps its children and reports how they ended (only a parent can); if it dies,
its children are watched like adopted processes (exit status unknown) and later launches are
exec'd again.
"""
from __future__ import annotations

import asyncio
import functools
import itertools
import json
import logging
import os
import shlex
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from . import zygote
from .procs import ManagedProcess, UNKNOWN_EXIT

log = logging.getLogger(__name__)

_SHELL_SYNTAX = set("|&;<>()$`\\\"'*?[]#~=%{}\n")


@dataclass(frozen=True)
class ModuleCommand:
    python: str
    module: str
    args: list[str]
    shell: bool = False  # through `sh -c`, which exports PWD


def module_command(command: dict[str, Any]) -> ModuleCommand | None:
    """The ``PYTHON -m MODULE ARGS`` a CommandInfo runs, if that is all it runs."""
    found = _module_command(bool(command.get("shell", True)), command.get("value", ""),
                            tuple(command.get("arguments", ())))
    return None if found is None else ModuleCommand(found.python, found.module, list(found.args), found.shell)


@functools.lru_cache(maxsize=64)  # every executor of a job runs the same command: shlex once, not per launch
def _module_command(shell: bool, value: str, arguments: tuple[str, ...]) -> ModuleCommand | None:
    if shell:
        try:
            words = shlex.split(value)
        except ValueError:
            return None
        # Quoting is fine (shlex undid it); anything a shell would interpret is not.
        if any(set(word) & _SHELL_SYNTAX for word in words):
            return None
        if words[:1] == ["exec"]:
            words = words[1:]
    else:
        words = list(arguments) or [value]
    if len(words) < 3 or words[1] != "-m" or not os.path.isabs(words[0]):
        return None
    return ModuleCommand(words[0], words[2], words[3:], shell)


def _startup_env(env: dict[str, str]) -> dict[str, str]:
    """What Python reads from the environment at start-up (sys.path, encodings, user site)."""
    return {k: v for k, v in env.items()
            if k.startswith(("PYTHON", "LC_")) or k in ("HOME", "LANG", "LANGUAGE", "VIRTUAL_ENV")}


class ForkServer:
    """The master's client of one zygote; used from the event loop thread only."""

    def __init__(self, loop: asyncio.AbstractEventLoop, modules: tuple[str, ...],
                 base_env: dict[str, str], preload: tuple[str, ...] = (), python: str = sys.executable) -> None:
        self._loop = loop
        self._modules = modules
        self._preload = preload
        self._base_env = base_env
        self._startup = _startup_env(base_env)  # what a forked child's environment must match
        self._user = _user()
        self.python = python
        self._process: subprocess.Popen | None = None
        self._sock: socket.socket | None = None
        self._ready: asyncio.Future[list[str]] | None = None
        self._preloaded: list[str] = []
        self._buffer = b""
        self._ids = itertools.count(1)
        self._requests: dict[int, asyncio.Future[int]] = {}
        self._watchers: dict[int, tuple[ManagedProcess, Callable[[int], None]]] = {}
        self._exited: dict[int, int] = {}
        self.failed = not modules
        self._starting: asyncio.Task | None = None

    def prestart(self) -> None:
        """Start the zygote now, so that the first launch finds it warm."""
        if not self.failed:
            self._starting = self._loop.create_task(self._start())

    def wants(self, command: dict[str, Any], env: dict[str, str]) -> ModuleCommand | None:
        if self.failed:
            return None
        parsed = module_command(command)
        if parsed is None or parsed.python != self.python or parsed.module not in self._modules:
            return None
        if _startup_env(env) != self._startup or command.get("user", "") not in ("", self._user):
            return None
        return parsed

    async def spawn(self, parsed: ModuleCommand, env: dict[str, str], cwd: Path) -> ManagedProcess | None:
        """The forked child, or None when the zygote cannot do it (the caller execs instead)."""
        if not await self._start():
            return None
        if parsed.module not in self._preloaded:
            return None
        request_id = next(self._ids)
        reply: asyncio.Future[int] = self._loop.create_future()
        self._requests[request_id] = reply
        self._write({"id": request_id, "argv0": parsed.python, "module": parsed.module, "args": parsed.args, "env": env,
                     "cwd": str(cwd), "shell": parsed.shell})
        try:
            pid = await asyncio.shield(reply)
        except asyncio.CancelledError:
            # The launch was given up while the fork was under way: no one will watch that child.
            reply.add_done_callback(lambda done: done.exception() is None and _kill_group(done.result()))
            raise
        except OSError as error:
            raise OSError(f"fork server: {error}") from None
        return ManagedProcess(None, adopted_pid=pid, directory=env.get("MESOS_DIRECTORY", ""),
                              exit_source=self)

    def watch_exit(self, process: ManagedProcess, on_exit: Callable[[int], None]) -> None:
        """``on_exit(returncode)`` in the loop once ``process`` has ended."""
        code = self._exited.pop(process.pid, None)
        if code is not None:
            self._loop.call_soon(on_exit, code)
        else:
            self._watchers[process.pid] = (process, on_exit)

    def close(self) -> None:
        self._lost("closed")
        if self._process is not None:
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

    # -- the zygote ---------------------------------------------------------
    async def _start(self) -> bool:
        if self.failed:
            return False
        if self._ready is None:
            self._ready = self._loop.create_future()
            try:
                self._launch_zygote()
            except OSError as error:
                log.warning("fork server not started (%s): executors are exec'd", error)
                self._lost(str(error))
                return False
        try:
            self._preloaded = await asyncio.shield(self._ready)
        except OSError:
            return False
        return not self.failed

    def _launch_zygote(self) -> None:
        ours, theirs = socket.socketpair()
        try:
            self._process = subprocess.Popen(
                [self.python, zygote.__file__, str(theirs.fileno()), ",".join(self._preload), *self._modules],
                env=self._base_env, cwd="/", stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),),
                # Out of the terminal's group: a Ctrl-C while it imports (before it ignores SIGINT)
                # is the master's, and killed the zygote with a traceback.
                process_group=0)
        finally:
            theirs.close()
        ours.setblocking(False)
        self._sock = ours
        self._loop.add_reader(ours.fileno(), self._readable)

    def _write(self, message: dict[str, Any]) -> None:
        assert self._sock is not None
        data = json.dumps(message).encode() + b"\n"
        try:
            sent = self._sock.send(data)  # requests are small: all of it, unless the zygote lags
        except BlockingIOError:
            sent = 0
        except OSError as error:
            self._lost(str(error))
            return
        if sent < len(data):  # its buffer is full: the rest blocking (the zygote reads promptly)
            self._sock.setblocking(True)
            try:
                self._sock.sendall(data[sent:])
            except OSError as error:
                self._lost(str(error))
            finally:
                if self._sock is not None:
                    self._sock.setblocking(False)

    def _readable(self) -> None:
        assert self._sock is not None
        try:
            data = self._sock.recv(1 << 16)
        except BlockingIOError:
            return
        except OSError as error:
            self._lost(str(error))
            return
        if not data:
            self._lost("the fork server exited")
            return
        self._buffer += data
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            self._message(json.loads(line))

    def _message(self, message: dict[str, Any]) -> None:
        if "ready" in message:
            if message["ready"] != zygote.VERSION:
                self._lost(f"fork server speaks version {message['ready']}, expected {zygote.VERSION}")
            elif self._ready is not None and not self._ready.done():
                self._ready.set_result(list(message.get("modules", [])))
        elif "exit" in message:
            pid, code = int(message["exit"]), int(message["returncode"])
            watcher = self._watchers.pop(pid, None)
            if watcher is None:
                self._exited[pid] = code
            else:
                watcher[1](code)
        else:
            reply = self._requests.pop(int(message["id"]), None)
            if reply is not None and not reply.done():
                if "pid" in message:
                    reply.set_result(int(message["pid"]))
                else:
                    reply.set_exception(OSError(message.get("error", "fork failed")))

    def _lost(self, why: str) -> None:
        """No more zygote: pending requests fail, live children are watched like adopted ones."""
        if not self.failed and self._modules:
            log.info("fork server gone (%s): executors are exec'd from now on", why)
        self.failed = True
        if self._sock is not None:
            self._loop.remove_reader(self._sock.fileno())
            self._sock.close()
            self._sock = None
        error = OSError(why)
        if self._ready is not None and not self._ready.done():
            self._ready.set_exception(error)
            self._ready.exception()  # retrieved: awaiting it is optional
        for reply in self._requests.values():
            if not reply.done():
                reply.set_exception(error)
        self._requests.clear()
        watchers, self._watchers = self._watchers, {}
        for process, on_exit in watchers.values():
            process.exit_source = None
            process.watch_pid(self._loop, lambda p, done=on_exit: done(UNKNOWN_EXIT))


def _user() -> str:
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return ""


def _kill_group(pid: int) -> None:
    for kill in (os.kill, os.killpg):  # the child may not have its own group yet
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
