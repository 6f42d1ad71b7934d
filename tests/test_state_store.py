"""The scheduler's persisted state, in a directory and in a real ZooKeeper."""
import pytest

from tfmesos.state_format import StateFormatError, encode, record
from tfmesos.state_store import DirStore, ZkStore


def roundtrip(store, stored_bytes):
    assert store.load() is None
    store.save(record("F-1", "d", None, {"launch_seq": 3}))
    assert stored_bytes() == encode(record("F-1", "d", None, {"launch_seq": 3})), "one encoding for every store"
    assert store.load() == record("F-1", "d", None, {"launch_seq": 3})
    store.save(record("F-1", "d", None, {"launch_seq": 4}))
    assert store.load()["job"]["launch_seq"] == 4
    store.save({**record("F-1", "d", None, {}), "format": 1000})  # written by a newer tfmesos
    with pytest.raises(StateFormatError, match="format 1000"):
        store.load()
    store.clear()
    assert store.load() is None


def test_dir_store(tmp_path):
    store = DirStore(tmp_path, "team/job")
    roundtrip(store, lambda: (tmp_path / "team__job.json").read_bytes())
    assert not list(tmp_path.glob(".state-*")), "no temporary file left behind"



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
