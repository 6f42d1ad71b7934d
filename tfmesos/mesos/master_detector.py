"""The leading Mesos master, followed in ZooKeeper (``--master zk://HOSTS/PATH``): each master
contends with an ephemeral sequential node ``PATH/json.info_<sequence>`` holding its MasterInfo
as JSON, and the lowest sequence leads (``subscription.leader_node``). A kazoo children watch on
PATH hands every change of leader to ``on_change`` (HOST:PORT, or None while none leads). The
scheduler driver imports this only for a ``zk://`` master.
"""
from __future__ import annotations

import json
import logging
import threading
from typing import Any, Callable

from .subscription import leader_node, master_address

log = logging.getLogger("tfmesos.mesos.master_detector")


class ZkMasterDetector:
    def __init__(self, hosts: str, path: str, on_change: Callable[[str | None], None], timeout: float = 10.0) -> None:
        self.hosts, self.path, self.on_change, self.timeout = hosts, path, on_change, timeout
        self.leader: str | None = None
        self._client: Any = None
        self._lock = threading.Lock()
        self._stopped = False
        self._watching = False  # the children watch is set (it renews itself)

    def start(self) -> None:
        """Connect (kazoo keeps reconnecting on its own afterwards) and watch from the first
        session on; the first leader reaches ``on_change`` as soon as it is read."""
        from kazoo.client import KazooClient

        self._client = KazooClient(hosts=self.hosts, timeout=self.timeout)
        self._client.add_listener(self._session)
        self._client.start_async()

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            client, self._client = self._client, None
        if client is not None:
            client.stop()
            client.close()

    def _session(self, state: str) -> None:
        """kazoo's state listener (it must not block): the watch is set up in a session."""
        client = self._client
        if state == "CONNECTED" and client is not None and not self._watching:
            client.handler.spawn(self._watch)

    def _watch(self, _event: Any = None) -> None:
        """A children watch on PATH (kazoo renews it across sessions), or, while PATH does not
        exist, a watch for its creation."""
        from kazoo.exceptions import KazooException
        from kazoo.recipe.watchers import ChildrenWatch

        with self._lock:
            client = self._client
            if client is None or self._watching:
                return
            try:
                if client.exists(self.path, watch=self._watch) is None:
                    missing = True
                else:
                    missing, self._watching = False, True
            except KazooException as exc:  # the session went meanwhile: the listener comes back
                log.info("watching %s%s: %s", self.hosts, self.path, exc)
                return
        if missing:
            self._changed(None)
            return
        ChildrenWatch(client, self.path, self._children)

    def _children(self, children: list[str]) -> bool:
        if self._stopped:
            return False  # ends the watch
        node = leader_node(children)
        address = None
        if node is not None:
            from kazoo.exceptions import NoNodeError

            try:
                data, _ = self._client.get(f"{self.path}/{node}")
                address = master_address(json.loads(data))
            except NoNodeError:
                return True  # gone between the listing and the read: the watch fires again
            except (ValueError, TypeError, AttributeError) as exc:
                log.warning("the leading master's node %s/%s is not a JSON MasterInfo (%s)", self.path, node, exc)
        self._changed(address)
        return True

    def _changed(self, address: str | None) -> None:
        with self._lock:
            if self._stopped or address == self.leader:
                return
            self.leader = address
        log.info("leading Mesos master in ZooKeeper at %s%s: %s", self.hosts, self.path, address or "none")
        self.on_change(address)
