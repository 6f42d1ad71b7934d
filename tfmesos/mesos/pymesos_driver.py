"""pymesos 0.3.15 as the scheduler's driver (``--driver pymesos``, ``TFMESOS_DRIVER=pymesos``): the
``pymesos`` extra (``python tools/install_pymesos.py``: its http-parser no longer builds from its
sdist on Python >= 3.11). The default is tfmesos' own driver (``scheduler_driver.py``); this module
is imported only when pymesos is chosen, and it is the one module that reaches into pymesos'
private attributes, all of them behind one class, ``Pymesos`` (``_get_conn``, ``_conn``,
``_timeout``, ``_basic_credential``, ``_framework``, ``stream_id``, ``pymesos.process``' SIGINT
handler; tests/mesos/test_pymesos_private.py keeps it so).

What pymesos does that tfmesos' driver does not, and what is done about it here:
- it re-subscribes the moment a stream drops: ``BackingOff`` waits in its ``disconnected`` call;
- it adds GPU_RESOURCES on its own, quotes a refused call's whole body (the tasks' environment)
  in its error, and opens a connection per call: its driver class is adapted (``driver_class``);
- importing it installs a SIGINT handler (by which its IO thread's error reaches the main thread):
  it is loaded in the main thread, after tfmesos' stop handlers, and its handler calls theirs
  (``load``, ``Pymesos.handler_on_top``).
"""
from __future__ import annotations

import json
import signal
import threading
import time
from typing import Any, Callable

from .calls_http import CallConnection, CallResponse, CallSender
from .driver import MesosAdapter
from .subscription import BACKOFF_MAX, reconnect_delay, launch_call


def load() -> type:
    """pymesos' ``MesosSchedulerDriver``, adapted. Main thread only: pymesos' import installs its
    SIGINT handler (``signal.signal`` works there only)."""
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("the pymesos driver must be started from the main thread (its import installs "
                           "a signal handler); use tfmesos' own driver (TFMESOS_DRIVER=own) elsewhere")
    Pymesos.handler_on_top()
    from pymesos import MesosSchedulerDriver

    from ..errors import mute_library_logs

    mute_library_logs()  # pymesos' import set its own log level
    return Pymesos.driver_class(MesosSchedulerDriver)


class BackingOff:
    """The adapter as pymesos sees it: pymesos reconnects the moment ``disconnected`` returns, so
    that call waits as tfmesos' own driver would before its next SUBSCRIBE (the Mesos docs'
    advice); ``release()`` lets the wait go when the driver stops."""

    def __init__(self, adapter: MesosAdapter) -> None:
        self.adapter = adapter
        self.released = threading.Event()
        self._quick_drops = 0
        self._subscribed_at = time.monotonic()  # drops before the first SUBSCRIBED back off too (503)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.adapter, name)

    def registered(self, driver: Any, *args: Any) -> None:
        self._subscribed_at = time.monotonic()
        self.adapter.registered(driver, *args)

    def reregistered(self, driver: Any, *args: Any) -> None:
        self._subscribed_at = time.monotonic()
        self.adapter.reregistered(driver, *args)

    def disconnected(self, driver: Any) -> None:
        ending = self.adapter.disconnected(driver)
        # After a refusal there is nothing to retry; after a stream that dropped at once, back off.
        if ending:
            delay = BACKOFF_MAX
        elif time.monotonic() - self._subscribed_at < BACKOFF_MAX:
            self._quick_drops += 1
            delay = reconnect_delay(self._quick_drops, 1.0)
        else:
            self._quick_drops, delay = 0, 0.0
        if delay:
            self.released.wait(delay)  # pymesos' IO thread waits here; release() lets it go

    def release(self) -> None:
        self.released.set()


class Pymesos:
    """Every use of pymesos' private parts, in one class: its driver subclassed, its connection
    replaced, its SIGINT handler put on top. A pymesos upgrade is checked here and nowhere else."""

    @staticmethod
    def connection_for(driver: Any, timeout: float | None) -> CallConnection | None:
        """pymesos' ``_get_conn``: the driver's connection to its master (or agent), made once."""
        if not driver.connected:
            return None
        if driver._conn is None:
            host, port = driver.master.split(":", 2)
            driver._conn = CallConnection(host, int(port), timeout=timeout)
        return driver._conn

    @staticmethod
    def driver_class(base: type) -> type:
        """pymesos adds GPU_RESOURCES to every framework on Mesos >= 1.0; keep our own choice. Calls
        go out on a ``CallConnection`` (mesos/calls_http.py): four per task in a big gang. Built
        with a job's shell (anything with a ``MesosAdapter`` as ``mesos``), pymesos calls the adapter."""

        class Driver(base):  # type: ignore[misc, valid-type]
            def __init__(self, sched: Any, *args: Any, **kwargs: Any) -> None:
                adapter = getattr(sched, "mesos", None)
                if isinstance(adapter, MesosAdapter):
                    sched, adapter.driver = BackingOff(adapter), self
                self.release = getattr(sched, "release", lambda: None)
                super().__init__(sched, *args, **kwargs)

            def _get_conn(self) -> CallConnection | None:
                return Pymesos.connection_for(self, self._timeout)

            def _send(self, *args: Any, **kwargs: Any) -> Any:
                try:
                    return super()._send(*args, **kwargs)
                except RuntimeError as exc:
                    raise Pymesos.without_request(exc) from None

            _sender: CallSender | None = None

            def launch_many(self, launches: list[tuple[str, list[dict[str, Any]], dict[str, Any]]],
                            answer: Callable[[list[str | None] | Exception], None]) -> None:
                """One ACCEPT (LAUNCH) per (offer id, task infos, filters), as pymesos' launchTasks
                builds it, pipelined by a ``CallSender``; ``answer`` gets, per call, None or why it was
                refused (or the exception that stopped them all)."""
                if not self.connected or self.framework_id is None:
                    raise RuntimeError("Not connected yet")
                bodies = [json.dumps(launch_call(self.framework_id, offer_id, infos, filters)).encode()
                          for offer_id, infos, filters in launches]
                headers = {"Content-Type": "application/json"}
                if self.stream_id:
                    headers["Mesos-Stream-Id"] = self.stream_id
                if self._basic_credential:
                    headers["Authorization"] = self._basic_credential
                if self._sender is None:
                    self._sender = CallSender("tfmesos-launches")

                def answered(result: list[CallResponse] | Exception) -> None:
                    answer(result if isinstance(result, Exception) else [
                        None if 200 <= r.status < 300 else f"{r.status} {r.read()[:300].decode(errors='replace')}"
                        for r in result])

                self._sender.submit(self.master, "/api/v1/scheduler", bodies, headers, answered)

            def stop(self, *args: Any, **kwargs: Any) -> Any:
                if self._sender is not None:
                    self._sender.close()
                    self._sender = None
                return super().stop(*args, **kwargs)

            @property
            def framework(self) -> dict[str, Any]:
                info = super().framework
                wanted = self._framework.get("capabilities", [])
                if not any(c.get("type") == "GPU_RESOURCES" for c in wanted):
                    kept = [c for c in info.get("capabilities", []) if c.get("type") != "GPU_RESOURCES"]
                    info["capabilities"] = kept
                return info

        return Driver

    @staticmethod
    def without_request(exc: RuntimeError) -> RuntimeError:
        """pymesos' error for a refused call quotes, after its first line, the whole call it sent:
        an ACCEPT's TaskInfos carry every task's environment (secrets among them), and the error is
        logged. Only the first line (the status and the master's answer) is kept."""
        first, newline, _ = str(exc).partition("\n")
        return RuntimeError(first) if newline and first.startswith("Failed to send request") else exc

    @staticmethod
    def handler_on_top() -> None:
        """pymesos' SIGINT handler (by which its IO thread's error reaches the main thread) over
        the one in place, which it calls for a plain SIGINT: its first import puts it there; a later
        session (after tfmesos' handlers were restored) puts it back. Where the handler in place
        is SIG_DFL or SIG_IGN (not callable: a TypeError out of pymesos' handler), a plain
        KeyboardInterrupt instead."""
        import pymesos.process as process  # its first import installs its handler

        if signal.getsignal(signal.SIGINT) is not process._handle_sigint:
            process._prev_handler = signal.signal(signal.SIGINT, process._handle_sigint)
        if not callable(process._prev_handler):
            process._prev_handler = signal.default_int_handler
