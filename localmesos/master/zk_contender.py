"""Announce the master in ZooKeeper the way a Mesos master does, so that schedulers can find it
with ``--master zk://HOST:PORT/PATH`` (pymesos' detector) and follow a leader change.

A Mesos master contends by creating an ephemeral sequential znode ``<path>/json.info_<seq>``
holding its MasterInfo as JSON; the leader is the lowest sequence number. Our single master
simply takes part; when it dies its node goes with its session, and a restarted master adds a
new one. kazoo is imported only when this is used.
"""
from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlparse


class ZkContender:
    def __init__(self, url: str, master_info: dict[str, Any]):
        parsed = urlparse(url)
        if parsed.scheme != "zk" or not parsed.netloc or not parsed.path.strip("/"):
            raise ValueError(f"--zk: {url!r} is invalid: expected zk://HOST:PORT[,HOST:PORT]/PATH")
        self.hosts, self.path = parsed.netloc, "/" + parsed.path.strip("/")
        self.info = master_info
        self.node: str | None = None
        self._zk: Any = None

    def start(self, timeout: float = 15.0) -> str:
        from kazoo.client import KazooClient

        self._zk = KazooClient(hosts=self.hosts, timeout=timeout)
        self._zk.start(timeout=timeout)
        self._zk.ensure_path(self.path)
        data = json.dumps(self.info, separators=(",", ":")).encode()
        self.node = self._zk.create(f"{self.path}/json.info_", data, ephemeral=True, sequence=True)
        return self.node

    def stop(self) -> None:
        if self._zk is not None:
            self._zk.stop()
            self._zk.close()
            self._zk = None
