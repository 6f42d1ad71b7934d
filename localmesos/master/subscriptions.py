"""Framework subscriptions: SUBSCRIBE (new, re-subscribed, failed over), heartbeats, the failover
timeout, UPDATE_FRAMEWORK, and a framework's removal (TEARDOWN or failover timeout)."""
from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import Any, Callable

from ..config import MasterConfig
from ..http.auth import Acls
from ..http.server import APPLICATION_JSON, EventStream, StreamResponse
from ..ids import IdGenerator
from .allocator import Allocator
from .cluster import Cluster, post
from .framework import Framework, ordered_info, roles_of
from .inverse_offers import InverseOfferBook
from .offers import OfferBook
from .tasks import TaskBook, master_status
from .validation import validate_framework

log = logging.getLogger(__name__)


class Subscriptions:
    def __init__(self, cluster: Cluster, config: MasterConfig, loop: asyncio.AbstractEventLoop, ids: IdGenerator,
                 acls: Acls | None, offers: OfferBook, inverse_offers: InverseOfferBook, tasks: TaskBook,
                 allocator: Allocator, master_info: Callable[[], dict[str, Any]]) -> None:
        self._cluster = cluster
        self._config = config
        self._loop = loop
        self._ids = ids
        self._acls = acls
        self._offers = offers
        self._inverse_offers = inverse_offers
        self._tasks = tasks
        self._allocator = allocator
        self._master_info = master_info

    def new_framework(self, framework_id: str, info: dict[str, Any], recovered: bool = False) -> Framework:
        framework = Framework(framework_id, ordered_info(info), recovered=recovered,
                              completed_tasks=deque(maxlen=self._config.tuning.max_completed_tasks_per_framework))
        self._cluster.frameworks[framework_id] = framework
        return framework

    def subscribe(self, subscribe: dict[str, Any], principal: str | None) -> StreamResponse:
        stream_id = self._ids.stream_id()

        def on_open(stream: EventStream) -> None:
            self._subscribe(stream, stream_id, subscribe, principal)

        return StreamResponse([("Content-Type", APPLICATION_JSON), ("Mesos-Stream-Id", stream_id)], on_open)

    def _subscribe(self, stream: EventStream, stream_id: str, subscribe: dict[str, Any],
                   principal: str | None) -> None:
        info = dict(subscribe["framework_info"])
        if principal is not None and "principal" not in info:
            info["principal"] = principal
        error = validate_framework(info)
        framework_id = info.get("id", {}).get("value", "")
        if error is None and framework_id and any(f.id == framework_id for f in self._cluster.completed_frameworks):
            error = "Framework has been removed"
        if error is None:
            invalid = set(subscribe.get("suppressed_roles", [])) - set(roles_of(info))
            if invalid:
                error = f"Suppressed roles {_stringify_set(invalid)} are not contained in the set of roles"
        if error is None:
            error = self.unauthorized_roles(info, framework_id)
        if error is not None:
            _refuse(stream, error)
            return

        if not framework_id:
            framework_id = self._ids.framework_id()
            info["id"] = {"value": framework_id}
            framework = self.new_framework(framework_id, info)
            framework.suppressed_roles = set(subscribe.get("suppressed_roles", []))
            self._connect(framework, stream, stream_id)
            self._allocator.trigger()
            return

        framework = self._cluster.frameworks.get(framework_id)
        if framework is None:
            # Unknown id (e.g. after a master restart): rebuild it from the FrameworkInfo.
            framework = self.new_framework(framework_id, info)
        else:
            # user and checkpoint are immutable; a principal change is an error.
            info["user"] = framework.info["user"]
            if "checkpoint" in framework.info or "checkpoint" in info:
                info["checkpoint"] = framework.info.get("checkpoint", False)
            if info.get("principal") != framework.info.get("principal"):
                _refuse(stream, "Changing framework's principal is not allowed.")
                return
            framework.info = ordered_info(info)
            framework.reregistered_time = time.time()
            framework.recovered = False
        framework.suppressed_roles = set(subscribe.get("suppressed_roles", []))
        if framework.connected:
            old = framework.stream
            framework.stream = None  # the old stream's close must not disconnect us
            old.send({"type": "ERROR", "error": {"message": "Framework failed over"}})  # type: ignore[union-attr]
            old.close()  # type: ignore[union-attr]
        self._drop_offers(framework)
        was_active = framework.active
        self._connect(framework, stream, stream_id)
        if not was_active:
            self._allocator.trigger()
        self._tell_agents(framework)

    def unauthorized_roles(self, info: dict[str, Any], framework_id: str) -> str | None:
        """The ACLs' register_frameworks verdict on the roles in ``info`` (None: allowed)."""
        if self._acls is None:
            return None
        roles = roles_of(info)
        if all(self._acls.may_register(info.get("principal"), role) for role in roles):
            return None
        # Mesos' words (trace 09-authz), the framework id empty when new.
        return f"Not authorized to register framework {framework_id} with roles {_stringify_set(set(roles))}"

    def _connect(self, framework: Framework, stream: EventStream, stream_id: str) -> None:
        if framework.failover_timer is not None:
            framework.failover_timer.cancel()
            framework.failover_timer = None
        framework.stream = stream
        framework.stream_id = stream_id
        framework.active = True
        framework.unregistered_time = 0.0
        stream.on_close(lambda closed: self._stream_closed(framework.id, closed))
        stream.send({"type": "SUBSCRIBED", "subscribed": {
            "framework_id": {"value": framework.id},
            "heartbeat_interval_seconds": float(self._config.heartbeat_interval),
            "master_info": self._master_info(),
        }})
        self._heartbeat(framework, stream)

    def _heartbeat(self, framework: Framework, stream: EventStream) -> None:
        if framework.stream is not stream or stream.closed:
            return
        stream.send({"type": "HEARTBEAT"})
        framework.heartbeat_timer = self._loop.call_later(
            self._config.heartbeat_interval, self._heartbeat, framework, stream)

    def _stream_closed(self, framework_id: str, stream: EventStream) -> None:
        """The scheduler's connection dropped: deactivate and start the failover timer."""
        framework = self._cluster.frameworks.get(framework_id)
        if framework is None or framework.stream is not stream:
            return
        framework.stream = None
        framework.active = False
        framework.unregistered_time = time.time()
        if framework.heartbeat_timer is not None:
            framework.heartbeat_timer.cancel()
            framework.heartbeat_timer = None
        self._drop_offers(framework)
        timeout = float(framework.info.get("failover_timeout", 0.0))
        framework.failover_timer = self._loop.call_later(
            timeout, self._failover_expired, framework_id, framework.reregistered_time)

    def _failover_expired(self, framework_id: str, reregistered_time: float) -> None:
        framework = self._cluster.frameworks.get(framework_id)
        if framework is None or framework.connected or framework.reregistered_time != reregistered_time:
            return
        log.info("framework %s did not fail over in time; removing it", framework_id)
        self.remove(framework)

    def remove(self, framework: Framework) -> None:
        """TEARDOWN or failover timeout: kill everything, forget the id for good."""
        cluster = self._cluster
        framework.removed = True
        framework.active = False
        self._stop_timers(framework)
        self._drop_offers(framework)
        for record in cluster.agents.values():
            post(self._loop, record.agent.shutdown_framework, framework.id)
        for task in list(framework.tasks.values()):
            self._tasks.end(task, master_status(task.task_id, "TASK_KILLED", f"Framework {framework.id} removed",
                                                "REASON_FRAMEWORK_REMOVED", task.agent_id, task.executor_id))
        for (agent_id, executor_id) in list(framework.executors):
            record = cluster.agents.get(agent_id)
            if record is not None:
                self._tasks.remove_executor(record, framework, executor_id)
        framework.executors.clear()
        framework.filters.clear()
        if framework.stream is not None:
            stream, framework.stream = framework.stream, None
            stream.close()
        if not framework.unregistered_time:
            framework.unregistered_time = time.time()
        cluster.frameworks.pop(framework.id, None)
        cluster.completed_frameworks.append(framework)

    def update(self, framework: Framework, call: dict[str, Any]) -> tuple[int, str]:
        """UPDATE_FRAMEWORK: (HTTP status, Mesos' refusal text)."""
        info = dict(call["framework_info"])
        error = validate_framework(info)
        if error is None and info.get("principal") != framework.info.get("principal"):
            error = "Changing framework's principal is not allowed."
        if error is None and info["user"] != framework.info["user"]:
            error = (f"Updating 'FrameworkInfo.user' is unsupported; attempted to update from "
                     f"'{framework.info['user']}' to '{info['user']}'")
        if error is None and bool(info.get("checkpoint")) != bool(framework.info.get("checkpoint")):
            error = (f"Updating 'FrameworkInfo.checkpoint' is unsupported; attempted to update from "
                     f"'{_bool(framework.info.get('checkpoint'))}' to '{_bool(info.get('checkpoint'))}'")
        invalid = set(call.get("suppressed_roles", [])) - set(roles_of(info))
        if error is None and invalid:
            error = f"Suppressed roles {_stringify_set(invalid)} are not contained in the set of roles"
        if error is not None:
            return 400, error
        refusal = self.unauthorized_roles(info, framework.id)
        if refusal is not None:
            return 403, refusal
        framework.info = ordered_info(info)
        framework.suppressed_roles = set(call.get("suppressed_roles", []))
        for offer in [o for o in framework.offers.values() if o.role not in framework.roles]:
            self._offers.remove(offer, rescind=True)
        self._tell_agents(framework)
        self._allocator.trigger()
        return 200, ""

    def _drop_offers(self, framework: Framework) -> None:
        """Its offers and inverse offers go without a RESCIND: its stream is gone (trace 08)."""
        for offer in list(framework.offers.values()):
            self._offers.remove(offer, rescind=False)
        self._inverse_offers.drop_framework(framework.id)

    def _tell_agents(self, framework: Framework) -> None:
        for record in self._cluster.agents.values():
            post(self._loop, record.agent.update_framework, framework.info)

    def close(self) -> None:
        """The master stops: every subscription ends, no timer fires."""
        for framework in list(self._cluster.frameworks.values()):
            self._stop_timers(framework)
            if framework.stream is not None:
                framework.stream.close()

    @staticmethod
    def _stop_timers(framework: Framework) -> None:
        for timer in (framework.heartbeat_timer, framework.failover_timer):
            if timer is not None:
                timer.cancel()
        framework.heartbeat_timer = framework.failover_timer = None


def _refuse(stream: EventStream, message: str) -> None:
    stream.send({"type": "ERROR", "error": {"message": message}})
    stream.close()


def _stringify_set(values: set[str]) -> str:
    return "{ " + ", ".join(sorted(values)) + " }"


def _bool(value: Any) -> str:
    return "true" if value else "false"
