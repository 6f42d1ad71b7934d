"""The scheduler's persisted state, in a directory and in a real ZooKeeper."""
import json
import subprocess

import pytest

from tfmesos.store.format import FORMAT, StateFormatError, encode, end_of, journal_entry, record
from tfmesos.store.state_store import ENDS_KEPT, DirStore, ZkStore, dir_names


def roundtrip(store, stored_bytes):
    assert store.load() is None
    store.save(record("F-1", "d", None, {"launch_seq": 3}))
    assert stored_bytes() == encode(record("F-1", "d", None, {"launch_seq": 3})), "one encoding for every store"
    assert store.load() == record("F-1", "d", None, {"launch_seq": 3})
    store.save(record("F-1", "d", None, {"launch_seq": 4}))
    assert store.load()["job"]["launch_seq"] == 4
    journal(store)
    store.save({**record("F-1", "d", None, {}), "format": 1000})  # written by a newer tfmesos
    with pytest.raises(StateFormatError, match="format 1000"):
        store.load()
    store.clear()
    assert store.load() is None


def journal(store):
    """A task's end appended, not the record rewritten: replayed on load, in order, only those of
    the record's generation; a whole record written afterwards starts afresh."""
    tasks = [{"key": ["worker", i], "state": "TASK_RUNNING"} for i in range(3)]
    job = {"phase": "RUNNING", "events": ["e1"], "tasks": tasks, "task_ids": {}}
    store.save(record("F-1", "d", None, job, journal_gen=7))
    store.append(journal_entry(7, {"phase": "RUNNING"}, ["worker:1 TASK_FINISHED"],
                               {"key": ["worker", 1], "state": "TASK_FINISHED"}))
    store.append(journal_entry(6, {"phase": "FAILED"}, ["stale"], {"key": ["worker", 2], "state": "TASK_LOST"}))
    store.append(journal_entry(7, {"phase": "FINISHING"}, ["worker:0 TASK_FAILED"],
                                {"key": ["worker", 0], "state": "TASK_FAILED"}))
    loaded = store.load()["job"]
    assert [t["state"] for t in loaded["tasks"]] == ["TASK_FAILED", "TASK_FINISHED", "TASK_RUNNING"]
    assert loaded["phase"] == "FINISHING" and loaded["events"] == ["e1", "worker:1 TASK_FINISHED", "worker:0 TASK_FAILED"]
    store.save(record("F-1", "d", None, job, journal_gen=8))
    assert [t["state"] for t in store.load()["job"]["tasks"]] == ["TASK_RUNNING"] * 3


def test_dir_store(tmp_path):
    store = DirStore(tmp_path, "team/job")
    roundtrip(store, lambda: (tmp_path / "team__job.json").read_bytes())
    assert not list(tmp_path.glob(".state-*")), "no temporary file left behind"
    assert not list(tmp_path.iterdir()), "clear() leaves neither the record nor its journal"


def test_a_torn_last_journal_entry_is_ignored(tmp_path):
    store = DirStore(tmp_path, "job")
    tasks = [{"key": ["worker", 0], "state": "TASK_RUNNING"}]
    store.save(record("F-1", "d", None, {"events": [], "tasks": tasks, "task_ids": {}}, journal_gen=1))
    store.append(journal_entry(1, {}, [], {"key": ["worker", 0], "state": "TASK_FINISHED"}))
    with open(store.journal, "ab") as f:
        f.write(b'{"gen":1,"job":{},"events":[],"task":{"key":["worker",0],"state":"TASK_FAI')  # crashed mid-write
    assert store.load()["job"]["tasks"][0]["state"] == "TASK_FINISHED"



def test_zk_store(zk):
    store = ZkStore(f"zk://{zk.hosts}/tfmesos", "team/job")
    try:
        roundtrip(store, lambda: store._zk.get(store.node)[0])
        assert store.node == "/tfmesos/team/job/state"
    finally:
        store.close()


def test_zk_url_is_checked():
    with pytest.raises(ValueError, match="expected zk://HOST:PORT"):
        ZkStore("http://h:1/x", "j")


def kept_ends(store, names):
    """The last ENDS_KEPT ends of a name are kept, newest first; older ones go; a record this
    tfmesos cannot read is left out rather than failing the listing."""
    assert store.ends() == []
    for i in range(ENDS_KEPT + 2):
        store.keep_end(record(f"F-{i}", "d", None, {"phase": "SUCCEEDED"}, end=end_of(1000.0 + i, None, {}, None, None)))
    ends = store.ends()
    assert [e["framework_id"] for e in ends] == [f"F-{i}" for i in range(ENDS_KEPT + 1, 1, -1)]
    assert ends[0]["end"]["at"] == 1000.0 + ENDS_KEPT + 1 and ends[0]["format"] == FORMAT
    store.keep_end({**record("F-new", "d", None, {}, end=end_of(5000.0, None, {}, None, None)), "format": 1000})
    assert [e["framework_id"] for e in store.ends()][:1] == [f"F-{ENDS_KEPT + 1}"]
    assert "team/job" in names() or "team__job" in names()
    store.clear()
    assert len(store.ends()) == ENDS_KEPT - 1, "clearing the running record keeps the ends (all but the unreadable)"


def test_dir_store_keeps_the_last_ends(tmp_path):
    store = DirStore(tmp_path, "team/job")
    kept_ends(store, lambda: dir_names(str(tmp_path)))
    assert dir_names(str(tmp_path)) == ["team__job"]


def test_zk_store_keeps_the_last_ends(zk):
    store = ZkStore(f"zk://{zk.hosts}/tfmesos-ends", "team/job")
    try:
        kept_ends(store, store.names)
        assert store.names() == ["team/job"]
    finally:
        store.close()


def test_zk_names_are_found_down_to_four_segments(zk):
    """`tfmesos jobs --zk` lists names of 1 to 4 segments (4 was one level too deep to be seen)."""
    names = ["a", "org/b", "org/team/c", "org/team/proj/d"]
    stores = [ZkStore(f"zk://{zk.hosts}/tfmesos-depth", name) for name in names]
    try:
        for store in stores:
            store.save(record("F-1", "d", None, {"phase": "RUNNING"}))
        assert stores[0].names() == sorted(names)
    finally:
        for store in stores:
            store.close()


def test_a_running_job_announces_its_api_and_a_dead_process_marker_is_ignored(tmp_path):
    store = DirStore(tmp_path, "team/job")
    assert store.announced() is None
    store.announce("127.0.0.1:8123")
    assert store.announced() == "127.0.0.1:8123"
    store.withdraw()
    assert store.announced() is None and not store.live.exists()
    dead = subprocess.Popen(["true"])
    dead.wait()
    store.live.write_text(json.dumps({"api": "127.0.0.1:1", "pid": dead.pid}))  # left by a crash
    assert store.announced() is None
    store.withdraw()
    assert store.live.exists(), "a marker that is not this process' is not removed"
