"""The warm interpreter behind ``forkserver.py``: run as a script, standard library only.

``python zygote.py FD PRELOAD MODULE...`` imports each MODULE (and the comma-separated
PRELOAD modules: what the MODULEs import lazily) once, then forks a child per request
read from the socket on FD; the child becomes what ``python -m MODULE ARGS`` would have been
(own process group, sandbox as cwd, its environment, stdout/stderr appended to the sandbox
files) without paying for interpreter start and imports again. The zygote reaps its
children and reports how each ended, since only a parent can learn an exit status.

Wire (JSON lines, one per message; contract shared with forkserver.py, VERSION below):
    ← {"ready": VERSION, "modules": [imported...]}
    → {"id": N, "argv0": PYTHON, "module": M, "args": [...], "env": {...}, "cwd": DIR, "shell": BOOL}
      (shell: the command went through ``sh -c``, which exports PWD: the child sets it as sh would)
    ← {"id": N, "pid": PID} | {"id": N, "error": TEXT}
    ← {"exit": PID, "returncode": RC}      (subprocess' convention: -SIG when killed)
The zygote ends when the socket closes (its master is gone) or with its parent (PDEATHSIG).
"""
from __future__ import annotations

import gc
import json
import os
import selectors
import signal
import socket
import sys
from typing import Any

VERSION = 4
_ADDED_AT_START: dict = {}
_SHOW_AS: Any = None  # see _show_as_prepared
_MAIN_CODE: dict = {}  # module -> what runpy runs for `-m module`, found and unmarshalled once
_PR_SET_PDEATHSIG = 1
_PR_SET_MM, _PR_SET_MM_MAP = 35, 14

# Python's own start-up dispositions, restored in a child: the zygote changes these for itself.
_CHILD_DEFAULTS = {signal.SIGTERM: signal.SIG_DFL, signal.SIGINT: signal.default_int_handler}


def main() -> None:
    fd = int(sys.argv[1])
    global _ADDED_AT_START
    _ADDED_AT_START = _interpreter_added_env()
    del sys.path[0]  # this script's folder: a child gets the path `python -m` would give it
    _die_with_parent()
    imported = []
    for module in sys.argv[3:] + [m for m in sys.argv[2].split(",") if m]:
        try:
            __import__(module)
            imported.append(module)
        except Exception as error:  # noqa: BLE001 - a module that cannot load is exec'd instead
            print(f"zygote: cannot preload {module}: {error}", file=sys.stderr)
    imported = [m for m in imported if m in sys.argv[3:]]  # only these may be run
    for module in imported:
        _MAIN_CODE[module] = _main_code(module)
    global _SHOW_AS
    _SHOW_AS = _show_as_prepared()
    sock = socket.socket(fileno=fd)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C on the master's terminal is the master's
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if not hasattr(os, "pidfd_open") or not hasattr(os, "P_PIDFD"):
        imported = []  # no pidfds (Linux < 5.4): the master execs everything
    _send(sock, {"ready": VERSION, "modules": imported})
    # Everything so far into the permanent generation: a child's collections never walk (and so
    # never write to, copying the page) the objects it shares with the zygote.
    gc.collect()
    gc.freeze()
    Zygote(sock, imported).serve()


class Zygote:
    """Forks on request and reports how each child ended (only a parent can reap it).

    Children are watched through pidfds: no SIGCHLD handler, and an exit is seen for exactly
    the child it belongs to. A child is reaped at once, as the master reaps what it execs:
    pids are handed out cyclically, so its pid is not given again before the master has
    finished with the ended container (killing what is left of its process group)."""

    def __init__(self, sock: socket.socket, modules: list) -> None:
        self.sock = sock
        self.modules = modules
        self.selector = selectors.DefaultSelector()  # epoll: a thousand children is fine
        self.selector.register(sock, selectors.EVENT_READ, None)

    def serve(self) -> None:
        pending = b""
        while True:
            for key, _ in self.selector.select():
                if key.data is not None:
                    self._ended(key.fd, key.data)
                    continue
                data = self.sock.recv(1 << 16)
                if not data:
                    return
                pending += data
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    self._request(json.loads(line))

    def _request(self, request: dict) -> None:
        reply: dict = {"id": request["id"]}
        if request.get("module") not in self.modules:
            reply["error"] = f"module {request.get('module')!r} was not preloaded"
        else:
            try:
                pid = _fork(request, self.sock, self.selector)
                self.selector.register(os.pidfd_open(pid), selectors.EVENT_READ, pid)
                reply["pid"] = pid
            except OSError as error:
                reply["error"] = str(error)
        _send(self.sock, reply)

    def _ended(self, pidfd: int, pid: int) -> None:
        self.selector.unregister(pidfd)
        info = os.waitid(os.P_PIDFD, pidfd, os.WEXITED)
        os.close(pidfd)
        code = info.si_status if info.si_code == os.CLD_EXITED else -info.si_status
        _send(self.sock, {"exit": pid, "returncode": code})


def _send(sock: socket.socket, message: dict) -> None:
    sock.sendall(json.dumps(message).encode() + b"\n")


def _fork(request: dict, sock: socket.socket, selector: object) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    code = 127
    try:
        _become(request, sock, selector)
        code = _run(request["module"], request["args"])
    except BaseException:  # noqa: BLE001 - setting up failed: say why where the sandbox's stderr is
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _become(request: dict, sock: socket.socket, selector: object) -> None:
    """What exec'ing ``python -m`` from the agent would have set up."""
    os.setpgid(0, 0)
    for number, handler in _CHILD_DEFAULTS.items():
        signal.signal(number, handler)
    # The zygote's descriptors (its socket, its epoll, a pidfd per live sibling: hundreds in a big
    # gang) go, as an exec'd python starts with 0-2 only: one close_range, not a close per sibling.
    highest = max([sock.fileno(), *selector.get_map()])  # type: ignore[attr-defined]
    selector.close()  # type: ignore[attr-defined]
    sock.close()
    os.closerange(3, highest + 1)
    cwd = request["cwd"]
    os.chdir(cwd)
    if request.get("shell"):
        request["env"]["PWD"] = _shell_pwd(request["env"].get("PWD"))
    devnull = os.open(os.devnull, os.O_RDONLY)
    out = os.open(os.path.join(cwd, "stdout"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    err = os.open(os.path.join(cwd, "stderr"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    for fd, target in ((devnull, 0), (out, 1), (err, 2)):
        os.dup2(fd, target)
        os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])
    for key, value in _ADDED_AT_START.items():  # e.g. LC_CTYPE from PEP 538's locale coercion
        os.environ.setdefault(key, value)
    _SHOW_AS([request["argv0"], "-m", request["module"], *request["args"]], request["env"])
    sys.path.insert(0, cwd)  # `python -m` puts the working directory first


def _shell_pwd(given: str | None) -> str:
    """The PWD a POSIX shell exports, in the working directory: the inherited one if it names that
    directory, else the physical path (getcwd; here, not a realpath's lstat per component in the master)."""
    try:
        if given and os.path.isabs(given) and os.path.samefile(given, "."):
            return given
    except OSError:
        pass
    return os.getcwd()


def _main_code(module: str) -> tuple | None:
    """runpy's (name, spec, code) for ``module``, found while it is out of sys.modules (as in a
    fresh ``python -m``); None where runpy's internals differ (then each child finds it again)."""
    import runpy

    loaded = sys.modules.pop(module)
    try:
        return runpy._get_module_details(module)  # type: ignore[attr-defined]
    except (AttributeError, ImportError, TypeError, ValueError):
        return None
    finally:
        sys.modules[module] = loaded


def _run(module: str, args: list) -> int:
    """runpy as ``-m`` does it, then the interpreter's own shutdown steps; returns the exit code."""
    import atexit
    import runpy
    import threading
    import traceback

    sys.modules.pop(module, None)  # preloaded for its imports; it runs afresh as __main__
    sys.argv = [module, *args]
    code = 0
    details = _MAIN_CODE.get(module)
    try:
        if details is None:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        else:  # what run_module does once it has the code: the zygote found and loaded it
            _, spec, main_code = details
            runpy._run_module_code(main_code, None, "__main__", spec)  # type: ignore[attr-defined]
    except SystemExit as exit_:
        code = _exit_code(exit_.code)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)  # as the interpreter does: die of the signal
    except BaseException:  # noqa: BLE001 - printed like an uncaught exception
        traceback.print_exc()
        code = 1
    threading._shutdown()  # type: ignore[attr-defined]  # join non-daemon threads, as at exit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    return code


def _exit_code(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    print(value, file=sys.stderr)
    return 1


def _interpreter_added_env() -> dict:
    """Variables the interpreter set in its own environment at start-up: a fresh ``python`` given
    the same start-up variables (the fork server checks that they match) would set them too."""
    try:
        with open("/proc/self/environ", "rb") as f:
            given = {entry.split(b"=", 1)[0].decode() for entry in f.read().split(b"\0") if entry}
    except OSError:
        return {}
    return {k: v for k, v in os.environ.items() if k not in given}


_KEEP: list = []  # the memory /proc/PID/cmdline and environ now point at: never freed


def _show_as_prepared() -> object:
    """Make /proc/PID/cmdline and /proc/PID/environ (what ps, psutil and Mesos tooling read) say
    what an exec'd ``python -m`` would show, by pointing the kernel's record of the argument and
    environment areas at new memory: prctl(PR_SET_MM, PR_SET_MM_MAP), which needs no privilege
    (kernels built with CONFIG_CHECKPOINT_RESTORE). Best effort: without it they show the zygote.

    Returns the function a child calls, ``show_as(argv, env)``; everything that does not change
    across a fork (libc's functions, the structure, the memory layout from /proc/self/stat) is
    looked up here, once in the zygote: done in each child it was ~1 ms and 200 page faults."""
    import ctypes

    class MmMap(ctypes.Structure):
        _fields_ = [(name, ctypes.c_uint64) for name in (
            "start_code", "end_code", "start_data", "end_data", "start_brk", "brk", "start_stack",
            "arg_start", "arg_end", "env_start", "env_end")] + [
            ("auxv", ctypes.c_void_p), ("auxv_size", ctypes.c_uint32), ("exe_fd", ctypes.c_uint32)]

    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()  # field 3 onwards (comm may hold spaces)
        libc = ctypes.CDLL(None, use_errno=True)
        sbrk, prctl = libc.sbrk, libc.prctl
        sbrk.restype = ctypes.c_void_p
        stat = lambda number: int(fields[number - 3])  # noqa: E731 - proc(5) numbers its fields from 1
        layout = {"start_code": stat(26), "end_code": stat(27), "start_data": stat(45), "end_data": stat(46),
                  "start_brk": stat(47), "start_stack": stat(28)}
    except (OSError, AttributeError, ValueError, IndexError):
        return lambda argv, env: None
    size = ctypes.sizeof(MmMap)

    def show_as(argv: list, env: dict) -> None:
        args = b"".join(os.fsencode(a) + b"\0" for a in argv)
        environ = b"".join(os.fsencode(k) + b"=" + os.fsencode(v) + b"\0" for k, v in env.items())
        areas = [ctypes.create_string_buffer(data, len(data)) for data in (args, environ)]
        _KEEP.extend(areas)
        arg_start, env_start = (ctypes.addressof(area) for area in areas)
        mm = MmMap(**layout, brk=sbrk(0), arg_start=arg_start, arg_end=arg_start + len(args),
                   env_start=env_start, env_end=env_start + len(environ),
                   auxv=None, auxv_size=0, exe_fd=0xFFFFFFFF)  # auxv and exe unchanged
        prctl(_PR_SET_MM, _PR_SET_MM_MAP, ctypes.byref(mm), size, 0)

    return show_as


def _die_with_parent() -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # not Linux: the closed socket ends it instead


if __name__ == "__main__":
    try:
        main()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the master went away (it may stop before the zygote is even ready): nothing to do
