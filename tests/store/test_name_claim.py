"""One live run per job name (store/name_claim.py, scheduler/live_run.py): the claim in a state
directory is a lock that exactly one of several processes gets, that the kernel frees when its
process dies however it dies, and that a refused run never disturbs; a marker whose process is
gone is told apart from a live one (its pid may belong to another process by now) and taken over;
in ZooKeeper the claim is an ephemeral node."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tfmesos.scheduler.live_run import LiveRun
from tfmesos.store.name_claim import Holder, NameTaken, process_alive, process_start, take_dir_claim
from tfmesos.store.state_store import DirStore, ZkStore, gone_runs

ROOT = Path(__file__).resolve().parents[2]
CLAIMER = textwrap.dedent("""
    import sys
    from tfmesos.store.name_claim import Holder, NameTaken, take_dir_claim
    sys.stdin.readline()  # all of them go at once
    try:
        claim = take_dir_claim(sys.argv[1], "job", Holder.here("job"))
    except NameTaken as exc:
        print("TAKEN", exc.holder.pid, flush=True)
        sys.exit(0)
    print("HELD", flush=True)
    sys.stdin.readline()  # held until told
    claim.release()
""")


def _claimer(state: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CLAIMER, str(state)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_of_runs_claiming_a_name_at_once_exactly_one_holds_it_and_the_others_name_it(tmp_path):
    runs = [_claimer(tmp_path) for _ in range(6)]
    try:
        for run in runs:
            run.stdin.write("go\n")
        for run in runs:
            run.stdin.flush()
        said = {run.pid: run.stdout.readline().split() for run in runs}
        held = [pid for pid, words in said.items() if words == ["HELD"]]
        assert len(held) == 1, said
        assert all(words == ["TAKEN", str(held[0])] for pid, words in said.items() if pid != held[0]), said
        marker = json.loads((tmp_path / "live" / "job.json").read_text())
        assert marker["pid"] == held[0] and marker["start"] == process_start(held[0])
    finally:
        for run in runs:
            run.stdin.close()
            run.wait(30)
    assert not list((tmp_path / "live").iterdir()), "the holder's release leaves nothing; the refused ones touch nothing"


def test_a_claim_held_by_a_killed_process_is_free_and_its_marker_is_taken_over(tmp_path):
    run = _claimer(tmp_path)
    run.stdin.write("go\n")
    run.stdin.flush()
    assert run.stdout.readline().split() == ["HELD"]
    os.kill(run.pid, signal.SIGKILL)  # no word: its marker stays
    run.wait(30)
    gone = DirStore(tmp_path, "job").gone()
    assert gone is not None and gone.pid == run.pid, "the marker of a gone scheduler is told at once"
    assert [h.pid for h in gone_runs(str(tmp_path))] == [run.pid]
    claim = take_dir_claim(tmp_path, "job", Holder.here("job"))
    try:
        assert claim.taken_over is not None and claim.taken_over.pid == run.pid
        assert DirStore(tmp_path, "job").gone() is None, "the marker is this run's now"
    finally:
        claim.release()


def test_a_pid_the_kernel_gave_another_process_is_not_the_scheduler_and_nor_is_a_zombie():
    me = os.getpid()
    assert process_alive(me, process_start(me))
    assert not process_alive(me, process_start(me) + 1), "same pid, another start: another process"
    assert process_alive(me, None), "a marker of an older tfmesos (no start time): the pid alone"
    child = subprocess.Popen(["true"])
    try:
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # ended, not reaped: a zombie
        assert process_start(child.pid) is None and not process_alive(child.pid, None)
    finally:
        child.wait()


def test_a_refused_claim_names_the_holder_its_api_and_how_to_stop_it(tmp_path):
    claim = take_dir_claim(tmp_path, "job", Holder.here("job"))
    try:
        claim.write(api="127.0.0.1:4321")
        with pytest.raises(NameTaken) as refused:
            take_dir_claim(tmp_path, "job", Holder.here("job"))
        text = str(refused.value)
        assert f"scheduler pid {os.getpid()} on this machine" in text and "API 127.0.0.1:4321" in text, text
        assert "tfmesos kill job" in text and str(tmp_path) in text, text
        assert json.loads(claim.marker.read_text())["api"] == "127.0.0.1:4321", "the holder's marker is untouched"
    finally:
        claim.release()


def test_a_claim_whose_marker_is_not_written_yet_is_named_by_the_lock_s_holder(tmp_path):
    """Two runs started at once: the refused one reads the live marker before the winner has written
    it. The kernel's record of the lock still names the winner's pid."""
    (tmp_path / "live").mkdir()
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import fcntl, os, sys
        fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        print("LOCKED", flush=True)
        sys.stdin.readline()
    """), str(tmp_path / "live" / "job.lock")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "LOCKED"
        with pytest.raises(NameTaken) as refused:
            take_dir_claim(tmp_path, "job", Holder.here("job"))
        assert refused.value.holder.pid == holder.pid
        assert f"scheduler pid {holder.pid} on this machine, starting" in str(refused.value), str(refused.value)
        assert not (tmp_path / "live" / "job.json").exists(), "the refused run wrote nothing"
    finally:
        holder.stdin.close()
        holder.wait(30)


def test_a_zookeeper_claim_is_one_session_s_and_goes_with_it(zk):
    url = f"zk://{zk.hosts}/tfmesos-claims"
    first, second = ZkStore(url, "team/job"), ZkStore(url, "team/job")
    try:
        mine = Holder.here("team/job", "10.0.0.1:5050")
        assert first.claim(mine) is None
        held = second.claim(Holder.here("team/job"))
        assert held is not None and held.pid == os.getpid() and held.master == "10.0.0.1:5050"
        second.drop_claim()  # not its own: nothing removed
        assert second.claim(Holder.here("team/job")) is not None
        first.close()  # its session ends: ZooKeeper removes the node
        assert second.claim(Holder.here("team/job")) is None
        assert second.names() == [], "the claim's node is no job name of its own"
    finally:
        second.close()


def test_a_zookeeper_claim_of_a_gone_process_of_this_host_is_taken_over_and_another_host_s_refused(zk, tmp_path):
    url = f"zk://{zk.hosts}/tfmesos-claims-stale"
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale, other = ZkStore(url, "job"), ZkStore(url, "job")
    said: list[str] = []
    try:
        assert stale.claim(Holder("job", dead.pid, 1, Holder.here("job").host, 1.0)) is None  # a killed scheduler's
        run = LiveRun("job", str(tmp_path), "embedded", said.append)
        run.claim_zk(other)  # its session has not timed out yet, but its process is gone
        assert said and f"pid {dead.pid}" in said[0] and "took over" in said[0], said
        run.release()
        assert stale.claim(Holder("job", 1, 1, "elsewhere.example", 1.0)) is None
        with pytest.raises(NameTaken) as refused:
            LiveRun("job", str(tmp_path), "embedded", said.append).claim_zk(other)
        assert "on elsewhere.example" in str(refused.value) and "ZooKeeper" in str(refused.value)
    finally:
        stale.close()
        other.close()
