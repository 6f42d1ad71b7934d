"""tfmesos/scheduler/signals.py in this very process: real signals to the test's own process, handled by
the StopSignals edge (with the pymesos driver, pymesos' SIGINT handler on top, calling ours). The
whole runs with real jobs are in tests/e2e/test_signals.py."""
from __future__ import annotations

import _thread
import os
import signal
import subprocess
import sys
import threading
import time

import psutil
import pytest

from tfmesos.scheduler.signals import SignalWakeup, StopSignals, StoppedBeforeStart


def _signalled(signum: int) -> None:
    """Send a signal to this process and let the main thread run its handler."""
    os.kill(os.getpid(), signum)
    time.sleep(0)  # a bytecode boundary: Python runs pending handlers here at the latest


@pytest.fixture
def installed():
    said: list[str] = []
    stops: list[int] = []
    stopped = threading.Event()

    def stop(signum: int) -> None:
        stops.append(signum)
        stopped.set()

    # A suite run under nohup (or as a background job) inherits SIGHUP ignored, which StopSignals
    # leaves ignored on purpose: these tests start from a terminal's defaults.
    hangup = signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signals = StopSignals(lambda: "2 task(s) to end", said.append).install()
    try:
        yield signals, stop, stops, stopped, said
    finally:
        signals.restore()
        signal.signal(signal.SIGHUP, hangup)


def test_the_first_signal_stops_in_a_thread(installed):
    signals, stop, stops, stopped, said = installed
    assert signal.getsignal(signal.SIGINT) == signals._handle
    signals.arm(stop)
    _signalled(signal.SIGINT)
    assert stopped.wait(10) and stops == [signal.SIGINT]
    assert (signals.exit_code, signals.cause) == (130, "stopped by SIGINT (Ctrl-C)")


def test_installing_the_stop_handlers_imports_no_pymesos():
    """The SIGINT workaround lives with the pymesos driver: the default path never imports pymesos."""
    import subprocess
    import sys

    probe = ("import sys; from tfmesos.scheduler.signals import StopSignals; "
             "s = StopSignals(lambda: '', print).install(); s.restore(); print('pymesos' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stdout + done.stderr


def test_a_second_signal_says_what_the_stop_waits_for(installed):
    signals, stop, stops, stopped, said = installed
    signals.arm(stop)
    _signalled(signal.SIGTERM)
    assert stopped.wait(10)
    _signalled(signal.SIGTERM)
    deadline = time.monotonic() + 10
    while not said and time.monotonic() < deadline:
        time.sleep(0.05)  # the line is said from a thread of its own (the console's lock)
    assert said == ["SIGTERM again: still stopping, waiting for 2 task(s) to end; a third signal gives up at once"]
    assert stops == [signal.SIGTERM] and signals.exit_code == 143, "the first signal decides the exit code"


def test_a_signal_before_there_is_a_job_unwinds_with_its_exit_code(installed):
    with pytest.raises(StoppedBeforeStart) as stopped:
        _signalled(signal.SIGHUP)
    assert stopped.value.code == 129


def test_with_the_pymesos_driver_its_handler_runs_on_top_of_ours(installed, monkeypatch):
    """pymesos hands its IO thread's error over with interrupt_main (a SIGINT): raised, not a stop;
    a Ctrl-C goes on to our handler. Loaded again (a later session), it is on top again."""
    import pymesos.process

    from tfmesos.mesos.pymesos_driver import Pymesos

    signals, stop, stops, stopped, said = installed
    signals.arm(stop)
    for _ in range(2):
        Pymesos.handler_on_top()
        assert signal.getsignal(signal.SIGINT) is pymesos.process._handle_sigint
        assert pymesos.process._prev_handler == signals._handle
        signal.signal(signal.SIGINT, signals._handle)  # as restoring our handlers leaves it
    Pymesos.handler_on_top()
    try:
        raise RuntimeError("Failed with HTTP 401: Unauthorized")
    except RuntimeError:
        import sys

        monkeypatch.setattr(pymesos.process, "_exc_info", sys.exc_info())
    with pytest.raises(RuntimeError, match="HTTP 401"):
        _thread.interrupt_main()
        time.sleep(1)
    assert not stops and signals.signum is None
    _signalled(signal.SIGINT)
    assert stopped.wait(10) and stops == [signal.SIGINT]


def test_restore_puts_back_the_previous_handlers():
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    StopSignals(lambda: "", print).install().restore()
    assert {sig: signal.getsignal(sig) for sig in before} == before


def test_an_ignored_sighup_stays_ignored_under_nohup():
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        signals = StopSignals(lambda: "", print).install()
        try:
            assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) == signals._handle
        finally:
            signals.restore()
    finally:
        signal.signal(signal.SIGHUP, previous)


def test_the_console_scripts_start_quiet_on_ctrl_c_before_the_command_runs():
    """setup.cfg's console scripts go through tfmesos.client.entry, which quiets Ctrl-C during the imports
    (tests/e2e/test_signals.py sends one then) and puts the previous handler back before the command."""
    import configparser
    import importlib
    from pathlib import Path

    import tfmesos.client.entry as entry

    config = configparser.ConfigParser()
    config.read(Path(__file__).resolve().parents[2] / "setup.cfg")
    scripts = dict(line.split(" = ") for line in config["options.entry_points"]["console_scripts"].split("\n") if line)
    assert scripts == {"tfmesos": "tfmesos.client.entry:tfmesos", "tfrun": "tfmesos.client.entry:tfrun"}
    for target in scripts.values():
        module, function = target.split(":")
        assert callable(getattr(importlib.import_module(module), function))
    before = signal.getsignal(signal.SIGINT)
    entry.quiet_imports()
    try:
        with pytest.raises(SystemExit) as leaving:
            _signalled(signal.SIGINT)
        assert leaving.value.code == 130
    finally:
        entry.imported()
    assert signal.getsignal(signal.SIGINT) is before


def test_off_the_main_thread_the_pymesos_driver_is_refused_plainly():
    """A cluster() opened from another thread cannot install signal handlers, which pymesos' import
    does: its driver is refused with the reason (tfmesos' own driver installs none)."""
    from tfmesos.mesos.pymesos_driver import load

    failed: list[BaseException] = []

    def try_load() -> None:
        try:
            load()
        except RuntimeError as exc:
            failed.append(exc)

    thread = threading.Thread(target=try_load)
    thread.start()
    thread.join(10)
    assert len(failed) == 1 and "main thread" in str(failed[0]) and "TFMESOS_DRIVER=own" in str(failed[0])


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM, signal.SIGINT])
def test_keep_serving_ends_at_any_stop_signal_and_puts_the_handlers_back(signum: int) -> None:
    """tfmesos run --keep-serving: the served end stops at SIGINT, SIGTERM and SIGHUP alike (the
    StopSignals edge), long before its time is up, and the handlers found before are back after."""
    import io

    from tfmesos.core.status import StatusSnapshot
    from tfmesos.scheduler import after_end
    from tfmesos.scheduler.console import Console
    from tfmesos.scheduler.http_api import ApiServer, Operations

    api = ApiServer(lambda: StatusSnapshot(name="served", phase="SUCCEEDED"), lambda: None, lambda: None)
    api.start()
    hangup = signal.signal(signal.SIGHUP, lambda *_: None)  # without the edge, a SIGHUP would end pytest
    # Not pymesos' own handler, which an earlier test's import may have left and restore() never puts back.
    interrupt = signal.signal(signal.SIGINT, signal.default_int_handler)
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signum))
    timer.start()
    started = time.monotonic()
    try:
        after_end.keep_serving(api, StatusSnapshot(name="served", phase="SUCCEEDED"), Operations(), 30.0,
                             Console(io.StringIO()))
    finally:
        timer.cancel()  # a serving that failed before the signal must not leave it to hit pytest
        timer.join()
        api.stop()
        after = {sig: signal.getsignal(sig) for sig in before}
        signal.signal(signal.SIGHUP, hangup)
        signal.signal(signal.SIGINT, interrupt)
    assert time.monotonic() - started < 10, f"{signal.Signals(signum).name} did not end the serving"
    assert after == before


def test_a_stop_signal_heard_between_the_job_s_end_and_the_serving_ends_the_serving_at_once() -> None:
    """A SIGTERM sent as the job's end was printed can reach the run's own handlers before
    --keep-serving installs its own: the serving asks whether one came (the runner counts the
    signals heard since the end) and does not serve its 30 s."""
    import io

    from tfmesos.core.status import StatusSnapshot
    from tfmesos.scheduler import after_end
    from tfmesos.scheduler.console import Console
    from tfmesos.scheduler.http_api import ApiServer, Operations

    api = ApiServer(lambda: StatusSnapshot(name="served", phase="SUCCEEDED"), lambda: None, lambda: None)
    api.start()
    out = io.StringIO()
    started = time.monotonic()
    try:
        after_end.keep_serving(api, StatusSnapshot(name="served", phase="SUCCEEDED"), Operations(), 30.0,
                               Console(out), stopped_since_the_end=lambda: True)
    finally:
        api.stop()
    assert time.monotonic() - started < 10, "served on though a stop signal had come"
    assert "stays on" in out.getvalue()


def test_a_signal_wakeup_ends_at_a_signal_another_thread_took_at_set_and_at_a_burst():
    """SignalWakeup (the Marathon lifecycle's wait). A SIGTERM the kernel gave to another thread
    ends the wait, though the main thread was never interrupted (a threading.Event set by the
    handler would wait until something else woke the main thread); set() from another thread
    ends it with None; a burst of SIGTERMs ends it (a handler that set an Event could deadlock
    inside its own set()); the handler and the wakeup fd are put back."""
    before = signal.getsignal(signal.SIGTERM)
    wakeup = SignalWakeup(signal.SIGTERM)
    try:
        started, done = threading.Event(), threading.Event()
        other = threading.Thread(target=lambda: (started.set(), done.wait(30)), daemon=True)
        other.start()
        assert started.wait(10)
        signal.pthread_kill(other.ident, signal.SIGTERM)  # Python's C handler runs on that thread
        assert wakeup.wait() == signal.SIGTERM
        done.set()

        threading.Timer(0.05, wakeup.set).start()
        assert wakeup.wait() is None

        def burst() -> None:
            for _ in range(500):
                os.kill(os.getpid(), signal.SIGTERM)

        sender = threading.Thread(target=burst)
        sender.start()
        assert wakeup.wait() == signal.SIGTERM
        sender.join(10)
    finally:
        wakeup.close()
    assert signal.getsignal(signal.SIGTERM) is before
    assert signal.set_wakeup_fd(-1) == -1, "no wakeup fd left behind"


_ORPHANED_DURING_THE_GIVE_UP = """
import os, subprocess, sys
import psutil
from tfmesos.scheduler.signals import kill_descendants
print(kill_descendants(), flush=True)  # the give-up's first rounds: nothing yet
# An executor that starts its task (a process group of its own) and dies before a round finds it.
executor = "import subprocess; print(subprocess.Popen(['sleep', '60'], start_new_session=True, " \\
           "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid)"
task = int(subprocess.run([sys.executable, "-c", executor], capture_output=True, text=True, check=True).stdout)
print(task, psutil.Process(task).ppid(), os.getpid(), flush=True)
print(kill_descendants(), psutil.pid_exists(task) and psutil.Process(task).status() != psutil.STATUS_ZOMBIE)
"""


def test_a_task_orphaned_while_the_run_gives_up_is_adopted_and_killed_by_the_last_round():
    """The give-up's rounds kill an executor while it forks its task: the task, re-parented, must still
    be found (a Ctrl-C thrice during placement left one running)."""
    run = subprocess.run([sys.executable, "-c", _ORPHANED_DURING_THE_GIVE_UP], capture_output=True, text=True,
                         timeout=60)
    lines = run.stdout.split("\n")
    try:
        assert run.returncode == 0, run.stderr
        assert lines[0] == "0", lines
        task, parent, giving_up = map(int, lines[1].split())
        assert parent == giving_up, f"the orphaned task went to pid {parent}, not to the run giving up"
        assert lines[2] == "1 False", f"killed, task still alive: {lines[2]}"
    finally:
        if len(lines) > 1 and lines[1]:
            try:
                left = psutil.Process(int(lines[1].split()[0]))
                if left.name() == "sleep":  # not a pid given again since
                    left.kill()
            except psutil.Error:
                pass
