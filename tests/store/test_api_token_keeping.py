"""Where a job's generated API token is kept: a 0600 file in the state directory (never readable
by others, not even while it is written), a ZooKeeper node only its owner's digest user reads."""
from __future__ import annotations

import os
import stat

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import OPEN_ACL_UNSAFE

from tfmesos.api.token import new_token
from tfmesos.errors import UsageError
from tfmesos.store.state_store import DirStore, ZkStore, live_names, zk_auth

OWNER, OTHER = ("team-a", "pw-a"), ("team-b", "pw-b")


def test_a_new_token_is_random_and_fits_a_header_and_a_fragment():
    tokens = {new_token() for _ in range(50)}
    assert len(tokens) == 50
    assert all(len(t) >= 43 and t.replace("-", "").replace("_", "").isalnum() for t in tokens), "256 bits, URL-safe"


def test_the_token_file_is_the_owners_alone_from_its_first_byte(tmp_path, monkeypatch):
    seen = []
    replace = os.replace

    def spying_replace(src, dst):  # the temporary file as it is before it takes the token's name
        seen.append((str(dst), stat.S_IMODE(os.stat(src).st_mode), open(src).read()))
        replace(src, dst)

    monkeypatch.setattr(os, "replace", spying_replace)
    old = os.umask(0)  # a umask that would make a plainly created file world-readable
    try:
        store = DirStore(tmp_path / "state", "team/job")
        store.keep_token("tok-1")
    finally:
        os.umask(old)
    assert seen == [(str(store.token_file), 0o600, "tok-1")]
    assert stat.S_IMODE(store.token_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.token_file.parent.stat().st_mode) == 0o700, "live/ made by it is its owner's only"
    assert store.token() == "tok-1"


def test_a_dropped_token_goes_unless_a_newer_run_wrote_its_own(tmp_path):
    store = DirStore(tmp_path, "job")
    store.keep_token("old")
    store.keep_token("new")  # a second run of the same name
    store.drop_token("old")
    assert store.token() == "new"
    store.drop_token("new")
    assert store.token() is None and not store.token_file.exists()


def test_live_names_are_the_announced_jobs(tmp_path):
    DirStore(tmp_path, "a/b").announce("127.0.0.1:1")
    DirStore(tmp_path, "c").keep_token("t")
    assert live_names(str(tmp_path)) == ["a__b"]
    assert DirStore(tmp_path, live_names(str(tmp_path))[0]).announced() == "127.0.0.1:1"


def test_zk_auth_is_user_colon_password_and_a_bad_one_is_named_not_quoted():
    assert zk_auth({}) is None
    assert zk_auth({"TFMESOS_ZK_AUTH": " team-a:p:w\n"}) == ("team-a", "p:w")
    for bad in ("nocolon", ":pw", "user:", "us\ter:pw"):
        with pytest.raises(UsageError) as err:
            zk_auth({"TFMESOS_ZK_AUTH": bad})
        assert "TFMESOS_ZK_AUTH" in str(err.value) and "expected" in str(err.value)
    with pytest.raises(UsageError) as err:
        zk_auth({"TFMESOS_ZK_AUTH": "secretword"})
    assert "secretword" not in str(err.value)


def test_only_the_owners_zookeeper_user_reads_the_token_node(zk):
    url = f"zk://{zk.hosts}/tfmesos-token"
    owner = ZkStore(url, "team/job")
    intruder = KazooClient(hosts=zk.hosts)
    intruder.start(15)
    try:
        # Another client made the node first, open to all: it is replaced, not written into.
        intruder.create(owner.token_node, b"planted", acl=OPEN_ACL_UNSAFE, makepath=True)
        owner.keep_token("the-token", OWNER)
        acl, _ = owner._zk.get_acls(owner.token_node)
        with pytest.raises(NoAuthError):
            intruder.get_acls(owner.token_node)
        assert [(a.id.scheme, a.id.id.split(":")[0], a.perms) for a in acl] == [("digest", "team-a", 31)]
        with pytest.raises(NoAuthError):
            intruder.get(owner.token_node)  # no credentials
        intruder.add_auth("digest", "team-b:pw-b")
        with pytest.raises(NoAuthError):
            intruder.get(owner.token_node)  # another team's
        with pytest.raises(NoAuthError):
            intruder.set(owner.token_node, b"mine")
        reader = ZkStore(url, "team/job")  # another session: another team's user, then the owner's elsewhere
        try:
            assert reader.token(OTHER) is None
            assert reader.token(OWNER) == "the-token"
        finally:
            reader.close()
        assert "api-token" not in owner.names(), "the token's node is no job name"
        owner.drop_token("the-token", OWNER)

        # On a fresh path, the nodes made above the token's stay open: other jobs' state goes there.
        fresh = ZkStore(f"zk://{zk.hosts}/tfmesos-token-fresh", "team/job2")
        try:
            fresh.keep_token("t2", OWNER)
            for node in ("/tfmesos-token-fresh", "/tfmesos-token-fresh/team", "/tfmesos-token-fresh/team/job2"):
                assert [a.id.scheme for a in intruder.get_acls(node)[0]] == ["world"], node
            intruder.create("/tfmesos-token-fresh/other/state", b"{}", makepath=True)
        finally:
            fresh.close()
        assert not intruder.exists(owner.token_node)
    finally:
        intruder.stop()
        intruder.close()
        owner.close()
