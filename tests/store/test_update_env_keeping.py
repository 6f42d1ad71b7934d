"""Where an update's env values are kept for a failover (the record keeps env names only): in
ZooKeeper, a node only the owner's digest user (TFMESOS_ZK_AUTH) reads, and none without that
variable; gone with the record. The state directory's 0600 file: tests/store/test_job_store.py."""
from __future__ import annotations

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from tfmesos.masking import env_of
from tfmesos.store.state_store import ZK_AUTH_ENV, ZkStore

ENV = env_of({"job": {"env": ["LR=0.0733"]}, "roles": {"worker": {"count": 2, "env": ["SEED=7"]}, "ps": {"count": 1}}})


def test_env_of_keeps_the_env_lists_alone_in_the_options_shape():
    assert ENV == {"job": {"env": ["LR=0.0733"]}, "roles": {"worker": {"env": ["SEED=7"]}}}


def test_only_the_owners_zookeeper_user_reads_an_updates_env_and_none_is_kept_without_one(zk, monkeypatch):
    url = f"zk://{zk.hosts}/tfmesos-update-env"
    monkeypatch.delenv(ZK_AUTH_ENV, raising=False)
    owner = ZkStore(url, "team/job")
    intruder = KazooClient(hosts=zk.hosts)
    intruder.start(15)
    try:
        assert owner.keep_env(ENV) is False and not intruder.exists(owner.env_node), "an open node: not written"
        assert owner.kept_env() is None
        monkeypatch.setenv(ZK_AUTH_ENV, "team-a:pw-a")
        assert owner.keep_env(ENV) is True
        with pytest.raises(NoAuthError):
            intruder.get(owner.env_node)
        intruder.add_auth("digest", "team-b:pw-b")
        with pytest.raises(NoAuthError):
            intruder.get(owner.env_node)  # another team's
        reader = ZkStore(url, "team/job")  # another session, the owner's user: a failed-over scheduler
        try:
            assert reader.kept_env() == ENV
            monkeypatch.setenv(ZK_AUTH_ENV, "team-b:pw-b")  # another team's user, in a session of its own
            other = ZkStore(url, "team/job")
            try:
                assert other.kept_env() is None
            finally:
                other.close()
        finally:
            reader.close()
        assert "update-env" not in owner.names(), "the node is no job name"
        owner.clear()
        assert not intruder.exists(owner.env_node), "gone with the record"
    finally:
        intruder.stop()
        intruder.close()
        owner.close()
