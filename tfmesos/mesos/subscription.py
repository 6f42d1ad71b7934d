"""What the scheduler driver (``scheduler_driver.py``) decides about its link to the master, as plain
functions of plain data: where the master is (an address, a redirect, ZooKeeper's leader), what
an answer to SUBSCRIBE means, how long to wait before subscribing again, when a silent stream is
dead, which callback an event goes to, and the calls' bodies. No I/O, clock or randomness (the
driver passes its jitter in): each is unit-tested in tests/mesos/test_subscription.py.

Sources: the Mesos v1 scheduler API (``docs/scheduler-http-api.md``: 307 with a protocol-relative
``Location``, 503 while there is no leader, heartbeats every 15 s with about five missed meaning a
dead link, resubscribing with backoff), the ZooKeeper contender (``json.info_<sequence>`` nodes,
the lowest sequence leads).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

DEFAULT_PORT = 5050
BACKOFF_MIN = 0.5  # the first wait after a stream that failed or dropped at once
BACKOFF_MAX = 15.0  # what the Mesos docs advise as the cap
STABLE_SECONDS = 15.0  # a stream subscribed this long was no quick failure: resubscribe at once
HEARTBEAT_MISSES = 5  # silent for this many heartbeat intervals: the link is dead (the Mesos docs)
MASTER_NODE = "json.info_"  # the ZooKeeper contender's label (the JSON MasterInfo), then a sequence

# What an answer to SUBSCRIBE means.
STREAM, REDIRECT, RETRY, REFUSED = "stream", "redirect", "retry", "refused"


@dataclass(frozen=True)
class MasterUrl:
    """Where the driver finds its master: ``address`` (HOST:PORT), or ZooKeeper's ``hosts``/``path``."""
    address: str = ""
    zk_hosts: str = ""
    zk_path: str = ""

    @property
    def detected(self) -> bool:
        return bool(self.zk_hosts)


def parse_master(master: str) -> MasterUrl:
    """``HOST:PORT``, ``HOST`` (port 5050), ``http://HOST:PORT``, or ``zk://``/``zoo://HOSTS/PATH``
    (``--master`` is checked for its form before: ``scheduler/reach.py``)."""
    scheme, sep, rest = master.partition("://")
    if sep and scheme in ("zk", "zoo"):
        hosts, slash, path = rest.partition("/")
        if not hosts or not path.strip("/"):
            raise ValueError(f"{master!r}: expected zk://HOST:PORT[,HOST:PORT]/PATH")
        return MasterUrl(zk_hosts=hosts, zk_path="/" + path.strip("/"))
    if sep and scheme != "http":
        raise ValueError(f"{master!r}: expected HOST:PORT, http://HOST:PORT or zk://HOSTS/PATH")
    address = (rest if sep else master).partition("/")[0]
    if not address:
        raise ValueError(f"{master!r}: no address")
    return MasterUrl(address=address if ":" in address else f"{address}:{DEFAULT_PORT}")


def redirect_target(location: str, current: str) -> str:
    """The HOST:PORT a 307's ``Location`` names: Mesos writes ``//HOST:PORT/api/v1/scheduler``."""
    text = location.strip()
    netloc = urlparse(text if "//" in text else "//" + text).netloc
    if not netloc:
        raise ValueError(f"a redirect without a master: Location {location!r} (from {current})")
    return netloc if ":" in netloc else f"{netloc}:{DEFAULT_PORT}"


def leader_node(children: list[str]) -> str | None:
    """The leading master's node among a ZooKeeper path's children: the lowest sequence number of
    the JSON MasterInfo nodes (others, e.g. ``log_replicas``, are no masters); None when none is."""
    masters = [c for c in children if c.startswith(MASTER_NODE) and c[len(MASTER_NODE):].isdigit()]
    return min(masters, key=lambda c: int(c[len(MASTER_NODE):]), default=None)


def master_address(info: dict[str, Any]) -> str:
    """HOST:PORT of a MasterInfo (as the contender writes it in JSON): its address, IP first."""
    address = info.get("address") or {}
    host = address.get("ip") or address.get("hostname") or info.get("hostname")
    port = address.get("port") or info.get("port")
    if not host or not port:
        raise ValueError(f"a MasterInfo without an address: {sorted(info)}")
    return f"{host}:{int(port)}"


def answer_kind(status: int) -> str:
    """What an HTTP status answering SUBSCRIBE means: STREAM (200), REDIRECT (307, not the
    leader), RETRY (503 no leader or still recovering, another 5xx, 404 of a master still
    starting), REFUSED (every other: no retry would change the master's mind)."""
    if status == 200:
        return STREAM
    if status == 307:
        return REDIRECT
    if status >= 500 or status == 404:
        return RETRY
    return REFUSED


def refusal(status: int, reason: str, text: str) -> str:
    """The message for a refused SUBSCRIBE (given to the scheduler's ``error``)."""
    said = " ".join(text.split())[:300]
    if status == 401:
        return (f"the master did not authenticate the framework (HTTP 401 {reason})"
                + (f": {said}" if said and said.rstrip(".") != f"401 {reason}" else ""))
    return f"HTTP {status} {reason}" + (f": {said}" if said else "")


def quick_failures_after(previous: int, subscribed_for: float | None) -> int:
    """Consecutive quick failures after an attempt: reset by a stream that stayed up
    STABLE_SECONDS (``subscribed_for``; None: it never got to SUBSCRIBED), else one more."""
    if subscribed_for is not None and subscribed_for >= STABLE_SECONDS:
        return 0
    return previous + 1


def reconnect_delay(quick_failures: int, jitter: float) -> float:
    """Seconds before the next SUBSCRIBE: none after a stable stream, else BACKOFF_MIN doubling per
    quick failure up to BACKOFF_MAX, scaled by ``jitter`` (0 to 1) into its upper half so that
    schedulers that lost one master do not come back in step."""
    if quick_failures <= 0:
        return 0.0
    delay = min(BACKOFF_MIN * 2 ** (quick_failures - 1), BACKOFF_MAX)
    return delay * (0.5 + 0.5 * min(max(jitter, 0.0), 1.0))


def stream_timeout(heartbeat_interval: float | None, misses: int = HEARTBEAT_MISSES) -> float | None:
    """How long a subscribed stream may stay silent before it counts as dead (None: no limit)."""
    if not heartbeat_interval or heartbeat_interval <= 0:
        return None
    return heartbeat_interval * misses


def subscribe_call(framework_info: dict[str, Any], framework_id: str | None) -> dict[str, Any]:
    """SUBSCRIBE: the framework's info, with its id in both places once there is one (failover)."""
    info = dict(framework_info)
    call: dict[str, Any] = {"type": "SUBSCRIBE", "subscribe": {"framework_info": info}}
    if framework_id:
        info["id"] = {"value": framework_id}
        call["framework_id"] = {"value": framework_id}
    else:
        info.pop("id", None)
    return call


def call(kind: str, framework_id: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
    """Any other call: its type, the framework's id and (unless None) its lower-cased sub-object."""
    body: dict[str, Any] = {"type": kind, "framework_id": {"value": framework_id}}
    if payload is not None:
        body[kind.lower()] = payload
    return body


def launch_call(framework_id: str, offer_id: str, task_infos: list[dict[str, Any]],
                filters: dict[str, Any]) -> dict[str, Any]:
    """ACCEPT of one offer with one LAUNCH of ``task_infos`` (a gang's are pipelined)."""
    return call("ACCEPT", framework_id, {"offer_ids": [{"value": offer_id}],
                                         "operations": [{"type": "LAUNCH", "launch": {"task_infos": task_infos}}],
                                         "filters": filters})


def acknowledgement(status: dict[str, Any]) -> dict[str, Any] | None:
    """ACKNOWLEDGE's sub-object for a status update that needs one (it carries a uuid; the
    master's own updates carry none and must not be acknowledged)."""
    if not status.get("uuid") or "agent_id" not in status:
        return None
    return {"agent_id": status["agent_id"], "task_id": status["task_id"], "uuid": status["uuid"]}


def callback(event: dict[str, Any]) -> tuple[str, list[Any]] | None:
    """The Scheduler callback (pymesos' interface) an event goes to, with its arguments after the
    driver; None for an event with nothing to say (an empty offer list) or that is not understood.
    SUBSCRIBED is the driver's own business (registered/reregistered)."""
    kind = str(event.get("type", ""))
    if kind == "HEARTBEAT":
        return "processHeartBeat", []
    body = event.get(kind.lower())
    if not isinstance(body, dict):
        return None
    if kind == "OFFERS":
        return ("resourceOffers", [body["offers"]]) if body.get("offers") else None
    if kind == "INVERSE_OFFERS":
        return ("inverseOffers", [body["inverse_offers"]]) if body.get("inverse_offers") else None
    if kind == "RESCIND":
        return "offerRescinded", [body["offer_id"]]
    if kind == "RESCIND_INVERSE_OFFER":
        return "inverseOfferRescinded", [body["inverse_offer_id"]]
    if kind == "UPDATE":
        return "statusUpdate", [body["status"]]
    if kind == "UPDATE_OPERATION_STATUS":
        return "operationStatusUpdate", [body["status"]]
    if kind == "MESSAGE":
        return "frameworkMessage", [body["executor_id"], body["agent_id"], body["data"]]
    if kind == "FAILURE":
        if "executor_id" in body:
            return "executorLost", [body["executor_id"], body["agent_id"], body.get("status")]
        return "slaveLost", [body["agent_id"]]
    if kind == "ERROR":
        return "error", [body.get("message", "")]
    return None


def offer_ids(ids: Any) -> list[dict[str, Any]]:
    """pymesos takes one ``{"value": ...}`` or a list of them."""
    return [ids] if isinstance(ids, dict) else list(ids)
