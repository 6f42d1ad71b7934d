"""A running session's hold on its job's name, and the live marker that says who holds it.

``claim`` comes first in a session, before any master starts: a second run of a name that is live
in the same state directory (or, with ZooKeeper, anywhere: ``claim_zk``) is refused at once with
``NameTaken``, naming the run that holds it, its API and how to stop it. A marker left by a run
whose scheduler is gone (killed) is taken over, and the run says so. While the job runs, the marker
carries its API (``announce``) and its last state (``watch``: refreshed every REFRESH_SECONDS while
it changes), so that ``tfmesos status`` and ``jobs`` can tell at once, and with what was last
known, a run whose scheduler has gone without a word. ``release`` at the session's very end lets go
of the name: only this run's marker and lock are ever removed (store/name_claim.py).
"""
from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from ..store.name_claim import DirClaim, Holder, NameTaken, take_dir_claim
from ..store.state_store import file_name

if TYPE_CHECKING:
    from ..core.status import StatusSnapshot
    from ..store.state_store import StateStore

log = logging.getLogger("tfmesos.scheduler.live_run")

REFRESH_SECONDS = 2.0  # how stale the marker's last state may be
EVENTS_KEPT = 3  # the job's newest events in the marker


def last_state(snap: StatusSnapshot) -> dict[str, Any]:
    """What the marker keeps of the job's state: its phase and cause, its tasks counted by state,
    its progress and newest events (small, whatever the gang's size)."""
    tasks: dict[str, int] = {}
    for task in snap.tasks:
        tasks[task.state] = tasks.get(task.state, 0) + 1
    return {"phase": snap.phase, "cause": snap.cause, "queued": snap.queued, "tasks": tasks,
            "job_restarts": snap.job_restarts, "framework_id": snap.framework_id,
            "progress": snap.progress.to_json() if snap.progress is not None else None,
            "events": list(snap.events[-EVENTS_KEPT:])}


class LiveRun:
    """The name's claims (the state directory's, ZooKeeper's) and the marker, for one session."""

    def __init__(self, name: str, state_dir: str, master: str, say: Callable[[str], None]):
        self.name, self.state_dir, self.master, self.say = name, state_dir, master, say
        self.dir_claim: DirClaim | None = None
        self._zk: Any = None  # the ZkStore whose session holds the ZooKeeper claim
        self._watching: threading.Event | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ claiming
    def claim(self) -> "LiveRun":
        """The state directory's claim (NameTaken when a run of the name is live there); a
        directory that cannot hold a lock leaves the run without one (said in the log)."""
        holder = Holder.here(self.name, self.master)
        try:
            self.dir_claim = take_dir_claim(self.state_dir, file_name(self.name), holder)
        except OSError as exc:
            log.info("cannot claim the name %r in %s: %s", self.name, self.state_dir, exc)
            return self
        if self.dir_claim.taken_over is not None:
            self.say(_taken_over(self.dir_claim.taken_over))
        return self

    def claim_zk(self, store: StateStore | None) -> None:
        """With the state in ZooKeeper, its claim too (NameTaken when another run holds it). A node
        of a scheduler of this host that is gone is taken over; under Marathon, one of another
        host's instance is waited for, up to the session timeout (it may have been killed: its
        session ends then)."""
        from ..store.state_store import ZkStore
        from .marathon_app import under_marathon

        if not isinstance(store, ZkStore):
            return
        holder = Holder.here(self.name, self.master)
        waited = False
        while (held := store.claim(holder)) is not None:
            if held.on_this_host and held.pid and not held.alive():
                store.drop_claim(stale=True)
                self.say(_taken_over(held))
                continue
            if under_marathon() and not waited:
                self.say(f"job {self.name!r}: waiting up to {store.session_timeout:g} s for the claim of "
                         f"{held.describe()} to go (a former instance's ZooKeeper session)")
                waited = True
                if store.wait_claim_gone(store.session_timeout + 2.0):
                    continue
            raise NameTaken(held, f"ZooKeeper {store.where.rsplit(' node ', 1)[0]}")
        self._zk = store

    # ------------------------------------------------------------------ the marker
    def announce(self, api: str | None) -> None:
        """The marker (and ZooKeeper's node) say where the job's API listens (None: it stopped)."""
        self._write(api=api)
        if self._zk is not None and self.dir_claim is not None:
            try:
                self._zk.update_claim(self.dir_claim.holder)
            except Exception as exc:  # noqa: BLE001 - a ZooKeeper away: only the address in it is stale
                log.info("cannot update the claim in ZooKeeper: %s", exc)

    def watch(self, snapshot: Callable[[], StatusSnapshot]) -> None:
        """Keep the job's last state in the marker, every REFRESH_SECONDS while it changes, until
        ``release`` (or ``stop_watching``)."""
        self.stop_watching()
        stop = self._watching = threading.Event()

        def refresh() -> None:
            kept: dict[str, Any] | None = None
            while not stop.wait(REFRESH_SECONDS):
                try:
                    last = last_state(snapshot())
                except Exception:  # noqa: BLE001 - a snapshot taken mid-change: the next one will do
                    continue
                if last != kept:
                    self._write(last={**last, "at": time.time()})
                    kept = last

        threading.Thread(target=refresh, name="tfmesos-live-marker", daemon=True).start()

    def stop_watching(self) -> None:
        stop, self._watching = self._watching, None
        if stop is not None:
            stop.set()

    def _write(self, **changes: Any) -> None:
        with self._lock:
            if self.dir_claim is None:
                return
            try:
                self.dir_claim.write(**changes)
            except OSError as exc:  # a full disk: only `tfmesos status NAME` without --api misses it
                log.info("cannot write the live marker %s: %s", self.dir_claim.marker, exc)

    # ------------------------------------------------------------------ the end
    def release_zk(self) -> None:
        """Let go of the name in ZooKeeper (this run's node only), while its session is open."""
        zk, self._zk = self._zk, None
        if zk is not None:
            try:
                zk.drop_claim()
            except Exception as exc:  # noqa: BLE001 - its session's end removes it anyway
                log.info("cannot remove the claim in ZooKeeper: %s", exc)

    def release(self) -> None:
        """Let go of the name (this run's marker, lock and ZooKeeper node only); idempotent."""
        self.stop_watching()
        self.release_zk()
        with self._lock:
            claim, self.dir_claim = self.dir_claim, None
        if claim is not None:
            claim.release()


def _taken_over(gone: Holder) -> str:
    since = time.strftime(", started %Y-%m-%d %H:%M:%S", time.localtime(gone.since)) if gone.since else ""
    return (f"job {gone.name!r}: took over its name from an earlier run whose scheduler is gone (pid {gone.pid}"
            f"{since}{', on ' + gone.host if not gone.on_this_host else ''}): it ended without a word "
            "(killed: kill -9, the OOM killer?)")
