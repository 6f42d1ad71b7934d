"""SIGINT, SIGTERM and SIGHUP while ``tfmesos run``, ``tfrun`` or a ``tfmesos.cluster()`` block
runs: the handlers count them and carry out the step ``scheduler.signal_steps`` decides (stop, say what
the stop waits for, give up). Main thread only (Python runs handlers there).

(With ``--driver pymesos``, pymesos' import installs a SIGINT handler over ours that calls ours
after raising its IO thread's error, if any: ``mesos/pymesos_driver.py``. Nothing here knows.)
"""
from __future__ import annotations

import logging
import os
import shutil
import signal
import threading
from types import FrameType
from typing import Any, Callable

from . import signal_steps as stopping

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
LAST_WORDS_SECONDS = 3.0  # at most this long keeping the record after the third signal


class StoppedBeforeStart(SystemExit):
    """A stop signal before there was a job to stop: unwinds (cleanup in ``finally`` blocks)."""

    def __init__(self, signum: int):
        super().__init__(stopping.exit_code(signum))
        self.signum = signum


def signal_name(signum: int) -> str:
    return signal.Signals(signum).name


KILL_ROUNDS = 10  # at most: each round after the first finds only what was started during the one before
_PR_SET_CHILD_SUBREAPER = 36


def _adopt_orphans() -> None:
    """From now on a descendant whose parent dies is re-parented to this process, not to init: a
    task forked by its executor while the executor was being killed stays findable (Linux 3.4+)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: orphans go to init, as before
        pass


def kill_descendants() -> int:
    """SIGKILL every process this one started, directly or not (the embedded master's zygote,
    executors, tasks, a child master), and the process groups they lead or belong to (a task's
    own children). Returns how many processes were found."""
    import psutil

    _adopt_orphans()
    own_group = os.getpgrp()
    killed: set[psutil.Process] = set()
    # Rounds until one finds nothing new: a process forked while a round was sent (the zygote starting
    # an executor, an executor its task) is found by the next, as a child or, its parent killed, an
    # adopted orphan. Each round waits for its dead, so nothing still writes afterwards.
    for _ in range(KILL_ROUNDS):
        found = [p for p in psutil.Process().children(recursive=True) if p not in killed]
        if not found:
            break
        groups = set()
        for process in found:
            try:
                groups.add(os.getpgid(process.pid))
            except OSError:
                pass
        for group in groups - {own_group}:
            try:
                os.killpg(group, signal.SIGKILL)
            except OSError:
                pass
        for process in found:
            try:
                process.kill()  # psutil checks the pid is still that process
            except psutil.Error:
                pass
        psutil.wait_procs(found, timeout=2)
        killed.update(found)
    return len(killed)


class SignalWakeup:
    """``wait()`` in the main thread until one of ``signals`` arrives or any thread calls ``set()``.

    Not a ``threading.Event`` set from a handler: the handler runs in the main thread between two
    bytecodes, and a signal landing inside another handler's ``set()`` waits forever on the lock
    that thread holds. Python's C handler writes each signal's number to the wakeup fd from
    whichever thread the kernel picked, so the wait ends even when the main thread was not the
    one interrupted. Main thread only, from construction to ``close()``.
    """

    def __init__(self, *signals: int):
        self._signals = set(signals)
        self._r, self._w = os.pipe()
        os.set_blocking(self._w, False)
        self._previous_fd = signal.set_wakeup_fd(self._w, warn_on_full_buffer=False)  # before the handlers
        self._previous = {sig: signal.signal(sig, _news_in_the_wakeup_fd) for sig in signals}

    def set(self) -> None:
        try:
            os.write(self._w, b"\0")
        except BlockingIOError:  # full of earlier wake-ups: this one is not needed
            pass

    def wait(self) -> int | None:
        """The stop signal's number, or None when ``set()`` ended the wait."""
        while True:
            got = os.read(self._r, 1)[0]  # PEP 475: retried after a handler has run
            if got == 0:
                return None
            if got in self._signals:
                return got

    def close(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        signal.set_wakeup_fd(self._previous_fd)
        os.close(self._r)
        os.close(self._w)


def _news_in_the_wakeup_fd(signum: int, frame: FrameType | None) -> None:
    """SignalWakeup's handler: the C handler has written ``signum`` to the wakeup fd already."""


class StopSignals:
    """Our handlers for SIGINT, SIGTERM and SIGHUP, from ``install()`` to ``restore()``.

    ``stop(signum)`` (given by ``arm``; run on a thread of its own, never in the handler, so it
    may take locks the interrupted code holds) starts the stop. Before ``arm`` there is nothing
    to stop gracefully: the first signal unwinds the main thread (``StoppedBeforeStart``).
    ``unwind``: the first signal also unwinds the main thread with ``SystemExit(128 + signum)``
    after starting the stop (a ``cluster()`` block, whose ``__exit__`` then waits for it).
    ``leave(signum)``: a signal that makes the process leave at once without stopping the job
    (SIGTERM under Marathon: the next instance takes the job over).
    """

    def __init__(self, waiting_for: Callable[[], str], say: Callable[[str], None], *, unwind: bool = False,
                 leave: Callable[[int], bool] = lambda signum: False, give_up_note: str = ""):
        self.waiting_for, self.say, self.unwind, self.leave = waiting_for, say, unwind, leave
        self.give_up_note = give_up_note
        self.scratch: list[str] = []  # directories of this run only (the embedded master's), removed on giving up
        # What giving up still does, once the processes are killed (the run's record kept, its live
        # marker withdrawn): each bounded by LAST_WORDS_SECONDS in all, so a hung store cannot hold the exit.
        self.last_words: list[Callable[[], None]] = []
        self.signum: int | None = None  # the first stop signal received
        self.received = 0
        self._stop: Callable[[int], None] | None = None
        self._previous: dict[int, Any] = {}

    # ------------------------------------------------------------------ set-up
    def install(self) -> "StopSignals":
        if threading.current_thread() is not threading.main_thread():
            return self  # signal.signal works in the main thread only: the caller's handlers stay

        for sig in STOP_SIGNALS:
            current = signal.getsignal(sig)
            if sig == signal.SIGHUP and current == signal.SIG_IGN:
                continue  # nohup: a hangup is not meant to stop anything
            self._previous[sig] = current
            signal.signal(sig, self._handle)
        return self

    def arm(self, stop: Callable[[int], None]) -> None:
        self._stop = stop

    def restore(self) -> None:
        """Put the handlers found by ``install`` back."""
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    @property
    def exit_code(self) -> int | None:
        return None if self.signum is None else stopping.exit_code(self.signum)

    @property
    def cause(self) -> str:
        return stopping.cause(signal_name(self.signum)) if self.signum is not None else ""

    # ------------------------------------------------------------------ the handler
    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.leave(signum):
            raise SystemExit(stopping.exit_code(signum))
        self.received += 1
        step = stopping.step(self.received)
        if step == stopping.STOP:
            self.signum = signum
            if self._stop is None:
                raise StoppedBeforeStart(signum)
            self._in_thread(self._stop, signum)
            if self.unwind:
                raise SystemExit(stopping.exit_code(signum))
        elif step == stopping.EXPLAIN:
            self._in_thread(self._explain, signal_name(signum))
        else:
            self._give_up()

    def _explain(self, name: str) -> None:
        self.say(f"{name} again: still stopping, waiting for {self.waiting_for()}; "
                 "a third signal gives up at once")

    def _give_up(self) -> None:
        # No lock, no thread: the main thread may hold the console's lock. What other threads
        # would print about the processes killed here (executors "terminated") goes nowhere.
        logging.disable(logging.CRITICAL)
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        killed = kill_descendants()
        for path in self.scratch:
            for _ in range(3):  # a file written while the tree was removed keeps its folder: again
                shutil.rmtree(path, ignore_errors=True)
                if not os.path.exists(path):
                    break
        kept = self._say_last_words()
        killed += kill_descendants()  # what the embedded agents' threads launched meanwhile
        line = (f"[tfmesos] gave up at the third signal: killed {killed} process(es) this run started"
                + ("" if kept else "; the run's record could not be kept in time")
                + (f"; {self.give_up_note}" if self.give_up_note else "") + "\n")
        os.write(2, line.encode())
        os._exit(self.exit_code or stopping.exit_code(signal.SIGINT))

    def _say_last_words(self) -> bool:
        """``last_words`` on a thread of their own (the main thread may hold the locks they take),
        waited for at most LAST_WORDS_SECONDS; whether they all ran."""
        words = list(self.last_words)
        if not words:
            return True

        def run() -> None:
            for word in words:
                try:
                    word()
                except Exception:  # noqa: BLE001 - giving up goes on whatever one of them meets
                    pass

        thread = threading.Thread(target=run, name="tfmesos-last-words", daemon=True)
        thread.start()
        thread.join(LAST_WORDS_SECONDS)
        return not thread.is_alive()

    @staticmethod
    def _in_thread(target: Callable[..., None], *args: Any) -> None:
        threading.Thread(target=target, args=args, name="tfmesos-stop", daemon=True).start()
