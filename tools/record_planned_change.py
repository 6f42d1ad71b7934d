"""Record what a real Mesos 1.12 does on planned change: traces 13-17 of tests/data/mesos-traces/.

    flock /work/real-mesos.lock python3 tools/record_planned_change.py \\
        --tools ../shared/tools/real-mesos --port 5250 --out tests/data/mesos-traces [SCENARIO...]

Standard library only. For each scenario it starts a fresh master (127.0.0.1:PORT, in-memory
registry) and two agents on their own loopback addresses, so that each is a machine of its own for
maintenance (A: 127.0.0.2:PORT+1, ports 31000-31099; B: 127.0.0.3:PORT+2, ports 31100-31199),
drives them as a v1 HTTP scheduler and operator (raw ``http.client``: one connection for the
subscription, a fresh one per call), writes the JSONL trace in the format of the README there, with
ids, uuids, timestamps and local paths replaced by placeholders, and stops the cluster.

Scenarios: 13 drain (framework with TASK_KILLING_STATE), 14 drain (without), 15 deactivate and
reactivate, 16 maintenance schedule and inverse offers, 17 machine down and up.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
EXECUTOR = REPO / "tests" / "localmesos" / "executors" / "drain_executor.py"
JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json"}
A_IP, B_IP = "127.0.0.2", "127.0.0.3"
RESOURCES = {A_IP: "cpus:2;mem:2048;disk:10000;ports:[31000-31099]",
             B_IP: "cpus:2;mem:2048;disk:10000;ports:[31100-31199]"}
TIME_KEYS = {"timestamp", "registered_time", "reregistered_time", "unregistered_time", "start_time", "elected_time",
             "estimated_drain_start_time_seconds"}
NS_PARENTS = {"estimated_drain_start_time", "registered_time", "reregistered_time", "unreachable_time", "timestamp"}
TERMINAL = {"TASK_FINISHED", "TASK_FAILED", "TASK_KILLED", "TASK_LOST", "TASK_ERROR", "TASK_DROPPED", "TASK_GONE",
            "TASK_GONE_BY_OPERATOR", "TASK_UNREACHABLE"}


# -- the cluster ------------------------------------------------------------------------------------
class Cluster:
    def __init__(self, tools: Path, port: int, home: Path, master_flags: list[str]) -> None:
        self.tools, self.port, self.home = tools, port, home
        self.master = f"127.0.0.1:{port}"
        self.agent_ports = {A_IP: port + 1, B_IP: port + 2}
        env = {**os.environ, "MESOS_HOME": str(home), "MASTER_PORT": str(port)}
        self._env = env
        self._run("start-master.sh", *master_flags)
        for ip, agent_port in self.agent_ports.items():
            self._run("start-agent.sh", RESOURCES[ip], env={"AGENT_IP": ip, "AGENT_PORT": str(agent_port),
                                                             "MESOS_MASTER": self.master})
        deadline = time.monotonic() + 60
        while len(get_json(self.master, "/state").get("slaves", [])) < 2:
            if time.monotonic() > deadline:
                raise RuntimeError("agents did not register")
            time.sleep(0.2)

    def _run(self, script: str, *args: str, env: dict[str, str] | None = None) -> None:
        subprocess.run(["bash", str(self.tools / script), *args], env={**self._env, **(env or {})}, check=True,
                       stdout=subprocess.DEVNULL)

    def agent_id(self, ip: str) -> str:
        for slave in get_json(self.master, "/state")["slaves"]:
            if slave["hostname"] == ip:
                return slave["id"]
        raise KeyError(ip)

    def stop(self) -> None:
        subprocess.run(["bash", str(self.tools / "stop.sh")], env=self._env, check=False, stdout=subprocess.DEVNULL)


def get_json(address: str, path: str) -> Any:
    host, port = address.rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    connection.request("GET", path)
    response = connection.getresponse()
    body = response.read()
    connection.close()
    return json.loads(body) if body else None


# -- the recording ----------------------------------------------------------------------------------
class Recorder:
    """Lines of one trace; ids are collected as they are seen and replaced when it is written."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.started = time.monotonic()
        self.lines: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.calls_lock = threading.Lock()  # one call in flight at a time: each reply follows its call
        self.ids: dict[str, list[str]] = {}  # kind -> values in order of appearance
        self.literal: dict[str, str] = {}  # exact text -> placeholder (paths, chosen numbers)

    def now(self) -> float:
        return round(time.monotonic() - self.started, 2)

    def add(self, line: dict[str, Any]) -> None:
        with self.lock:
            self.lines.append({"t": self.now(), **line})

    def note(self, text: str, **values: Any) -> None:
        self.add({"dir": "env", "note": text, **({"body": values} if values else {})})

    def see(self, kind: str, value: str) -> None:
        known = self.ids.setdefault(kind, [])
        if value and value not in known:
            known.append(value)

    def call(self, path: str, body: Any, headers: dict[str, str] | None = None, note: str | None = None,
             method: str = "POST", record_body: Callable[[Any], Any] | None = None) -> tuple[int, Any]:
        with self.calls_lock:  # the acknowledgements run on threads of their own
            return self._call(path, body, headers, note, method, record_body)

    def _call(self, path: str, body: Any, headers: dict[str, str] | None, note: str | None, method: str,
              record_body: Callable[[Any], Any] | None) -> tuple[int, Any]:
        headers = dict(headers if headers is not None else JSON_HEADERS)
        line: dict[str, Any] = {"dir": "call", "method": method, "path": path, "headers": headers, "body": body}
        if note:
            line["note"] = note
        self.add(line)
        host, port = self.address.rsplit(":", 1)
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        data = None if body is None else (body.encode() if isinstance(body, str) else json.dumps(body).encode())
        connection.request(method, path, body=data, headers=headers)
        response = connection.getresponse()
        payload = response.read()
        connection.close()
        kept = {k: v for k, v in response.getheaders() if k in ("Content-Type", "Content-Length", "Location")}
        try:
            parsed: Any = json.loads(payload) if payload else None
        except ValueError:
            parsed = payload.decode("utf-8", "replace")
        shown = record_body(parsed) if record_body is not None else parsed
        self.add({"dir": "response", "http_status": response.status, "headers": kept, "body": shown})
        return response.status, parsed

    def write(self, path: Path, replacements: dict[str, str]) -> None:
        mapping: dict[str, str] = dict(replacements)
        mapping.update(self.literal)
        for kind, values in self.ids.items():
            for index, value in enumerate(values, 1):
                mapping.setdefault(value, f"<{kind}_{index}>")
        numbers: dict[str, dict[Any, str]] = {"TIMESTAMP": {}, "TIME_NS": {}, "PID": {}}

        def number(kind: str, value: Any) -> str:
            book = numbers[kind]
            if value not in book:
                book[value] = f"<{kind}_{len(book) + 1}>"
            return book[value]

        ordered = sorted(mapping, key=len, reverse=True)

        def text(value: str) -> str:
            if value in mapping:
                return mapping[value]
            for original in ordered:
                if original in value:
                    value = value.replace(original, mapping[original])
            return value

        def walk(node: Any, key: str = "", parent: str = "") -> Any:
            if isinstance(node, dict):
                return {k: walk(v, k, key) for k, v in node.items()}
            if isinstance(node, list):
                return [walk(v, key, parent) for v in node]
            if isinstance(node, str):
                return text(node)
            if isinstance(node, bool) or node is None:
                return node
            if key in TIME_KEYS and node:
                return number("TIMESTAMP", node)
            if key == "nanoseconds" and parent in NS_PARENTS:
                return number("TIME_NS", node)
            if key == "executor_pid":
                return number("PID", node)
            if str(node) in self.literal:
                return self.literal[str(node)]
            return node

        with path.open("w") as out:
            for line in sorted(self.lines, key=lambda entry: entry["t"]):
                out.write(json.dumps(walk(line)) + "\n")


class Subscription:
    """One scheduler: its stream read in a thread, its calls, its acknowledgements."""

    def __init__(self, recorder: Recorder, info: dict[str, Any], stream: str | None = None,
                 hold_terminal: bool = False) -> None:
        self.recorder = recorder
        self.stream_name = stream
        self.hold_terminal = hold_terminal  # terminal updates wait for acknowledge_all()
        self.events: "queue.Queue[dict[str, Any] | None]" = queue.Queue()
        self.unacknowledged: list[dict[str, Any]] = []
        self.backlog: list[dict[str, Any]] = []
        self.heartbeats = 0
        body = {"type": "SUBSCRIBE", "subscribe": {"framework_info": info}}
        recorder.add(self._tag({"dir": "call", "method": "POST", "path": "/api/v1/scheduler", "headers": JSON_HEADERS,
                                "body": body}))
        host, port = recorder.address.rsplit(":", 1)
        self._connection = http.client.HTTPConnection(host, int(port), timeout=600)
        self._connection.request("POST", "/api/v1/scheduler", json.dumps(body), JSON_HEADERS)
        self._response = self._connection.getresponse()
        headers = dict(self._response.getheaders())
        self.stream_id = headers["Mesos-Stream-Id"]
        recorder.see("STREAM_ID", self.stream_id)
        recorder.add(self._tag({"dir": "response", "http_status": self._response.status,
                                "headers": {k: headers[k] for k in ("Transfer-Encoding", "Mesos-Stream-Id",
                                                                    "Content-Type") if k in headers},
                                "body": None, "note": "streaming body follows as RecordIO records (dir=event)"}))
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        subscribed = self.next("SUBSCRIBED")
        self.framework_id = subscribed["subscribed"]["framework_id"]["value"]
        recorder.see("MASTER_ID", subscribed["subscribed"]["master_info"]["id"])
        recorder.see("FRAMEWORK_ID", self.framework_id)

    def _tag(self, line: dict[str, Any]) -> dict[str, Any]:
        return {**line, "stream": self.stream_name} if self.stream_name else line

    def _read(self) -> None:
        buffer = b""
        try:
            while True:
                chunk = self._response.read1(65536)
                if not chunk:
                    break
                buffer += chunk
                while b"\n" in buffer:
                    size, _, rest = buffer.partition(b"\n")
                    if len(rest) < int(size):
                        break
                    event = json.loads(rest[: int(size)])
                    buffer = rest[int(size):]
                    self._record(event)
        except (OSError, http.client.HTTPException, ValueError):
            pass
        self.recorder.add(self._tag({"dir": "event", "body": None, "note": "stream closed (EOF)"}))
        self.events.put(None)

    def _record(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind == "HEARTBEAT":
            self.heartbeats += 1
            if self.heartbeats > 2:
                return
        if kind == "OFFERS":
            for offer in event["offers"]["offers"]:
                self.recorder.see("OFFER_ID", offer["id"]["value"])
                self.recorder.see("AGENT_ID", offer["agent_id"]["value"])
        if kind == "INVERSE_OFFERS":
            for offer in event["inverse_offers"]["inverse_offers"]:
                self.recorder.see("OFFER_ID", offer["id"]["value"])
        if kind == "UPDATE":
            status = event["update"]["status"]
            if "uuid" in status:
                self.recorder.see("UUID", status["uuid"])
            container = status.get("container_status", {}).get("container_id", {})
            if container:
                self.recorder.see("CONTAINER_ID", container["value"])
        self.recorder.add(self._tag({"dir": "event", "body": event}))
        status = event.get("update", {}).get("status", {})
        if kind == "UPDATE" and "uuid" in status:
            if self.hold_terminal and status["state"] in TERMINAL:
                self.unacknowledged.append(status)
            else:
                threading.Thread(target=self.acknowledge, args=(status,), daemon=True).start()
        self.events.put(event)

    def next(self, kind: str | None = None, timeout: float = 30.0,
             where: Callable[[dict[str, Any]], bool] = lambda e: True) -> dict[str, Any]:
        """The first event (seen before or arriving) that matches; the others stay for later calls."""
        def matches(event: dict[str, Any]) -> bool:
            return (kind is None or event["type"] == kind) and where(event)

        for index, event in enumerate(self.backlog):
            if matches(event):
                return self.backlog.pop(index)
        deadline = time.monotonic() + timeout
        while True:
            event = self.events.get(timeout=max(0.01, deadline - time.monotonic()))
            if event is None:
                self.events.put(None)
                raise EOFError("stream closed")
            if matches(event):
                return event
            if event["type"] != "HEARTBEAT":
                self.backlog.append(event)

    def quiet(self, seconds: float) -> list[dict[str, Any]]:
        """Every event (heartbeats aside) not yet taken, and those arriving within ``seconds``."""
        seen, self.backlog = self.backlog, []
        deadline = time.monotonic() + seconds
        while True:
            remaining = deadline - time.monotonic()
            try:
                event = self.events.get(timeout=remaining) if remaining > 0 else self.events.get_nowait()
            except queue.Empty:
                return seen
            if event is None:
                self.events.put(None)
                return seen
            if event["type"] != "HEARTBEAT":
                seen.append(event)

    def call(self, kind: str, payload: dict[str, Any] | None = None, note: str | None = None) -> tuple[int, Any]:
        body: dict[str, Any] = {"framework_id": {"value": self.framework_id}, "type": kind}
        if payload is not None:
            body[kind.lower()] = payload
        headers = {**JSON_HEADERS, "Mesos-Stream-Id": self.stream_id}
        line_note = f"[{self.stream_name}] {note}" if self.stream_name and note else note
        return self.recorder.call("/api/v1/scheduler", body, headers, note=line_note)

    def acknowledge(self, status: dict[str, Any]) -> None:
        self.call("ACKNOWLEDGE", {"agent_id": status["agent_id"], "task_id": status["task_id"], "uuid": status["uuid"]})

    def acknowledge_all(self) -> None:
        while self.unacknowledged:
            self.acknowledge(self.unacknowledged.pop(0))

    def close(self) -> None:
        try:
            self._connection.sock.shutdown(2)  # type: ignore[union-attr]
        except OSError:
            pass
        self._thread.join(5)


# -- building blocks ------------------------------------------------------------------------------
def framework_info(name: str, killing_state: bool) -> dict[str, Any]:
    capabilities = [{"type": "MULTI_ROLE"}]
    if killing_state:
        capabilities.append({"type": "TASK_KILLING_STATE"})
    return {"user": "root", "name": name, "roles": ["*"], "capabilities": capabilities, "failover_timeout": 60.0,
            "checkpoint": True}


def scalar(name: str, value: float) -> dict[str, Any]:
    return {"name": name, "type": "SCALAR", "scalar": {"value": value}, "allocation_info": {"role": "*"}}


def command_task(task_id: str, agent_id: str, command: str, kill_grace: float | None = None) -> dict[str, Any]:
    task: dict[str, Any] = {"name": task_id, "task_id": {"value": task_id}, "agent_id": {"value": agent_id},
                            "resources": [scalar("cpus", 0.1), scalar("mem", 32)],
                            "command": {"shell": True, "value": command}}
    if kill_grace is not None:
        task["kill_policy"] = {"grace_period": {"nanoseconds": int(kill_grace * 1e9)}}
    return task


def executor_task(task_id: str, agent_id: str, kill_grace: float | None = None) -> dict[str, Any]:
    task = command_task(task_id, agent_id, "unused", kill_grace)
    del task["command"]
    task["executor"] = {"executor_id": {"value": f"exec-{task_id}"},
                        "command": {"shell": True, "value": f"{sys.executable} {EXECUTOR}"},
                        "resources": [scalar("cpus", 0.1), scalar("mem", 32)]}
    return task


def offer_on(scheduler: Subscription, agent_id: str, timeout: float = 30.0) -> dict[str, Any]:
    event = scheduler.next("OFFERS", timeout,
                           lambda e: any(o["agent_id"]["value"] == agent_id for o in e["offers"]["offers"]))
    return next(o for o in event["offers"]["offers"] if o["agent_id"]["value"] == agent_id)


def launch(scheduler: Subscription, offer: dict[str, Any], tasks: list[dict[str, Any]]) -> None:
    scheduler.call("ACCEPT", {"offer_ids": [offer["id"]], "filters": {"refuse_seconds": 0.0},
                              "operations": [{"type": "LAUNCH", "launch": {"task_infos": tasks}}]})


def wait_running(scheduler: Subscription, task_ids: set[str]) -> None:
    running: set[str] = set()
    while running != task_ids:
        status = scheduler.next("UPDATE")["update"]["status"]
        if status["state"] == "TASK_RUNNING":
            running.add(status["task_id"]["value"])


def operator(recorder: Recorder, kind: str, payload: dict[str, Any] | None = None, field: str | None = None,
             note: str | None = None, **kwargs: Any) -> tuple[int, Any]:
    body: dict[str, Any] = {"type": kind}
    if payload is not None:
        body[field or kind.lower()] = payload
    return recorder.call("/api/v1", body, note=note, **kwargs)


def agents_call(recorder: Recorder, note: str) -> Any:
    return operator(recorder, "GET_AGENTS", note=note)[1]


def state_slaves(recorder: Recorder, note: str) -> Any:
    """GET /state, its body cut down to the counts and the agents."""
    keep = ("activated_slaves", "deactivated_slaves", "unreachable_slaves", "slaves")
    return recorder.call("/state", None, headers={}, method="GET", note=note + " (body cut to " + ", ".join(keep) + ")",
                         record_body=lambda body: {k: body[k] for k in keep})[1]


def executor_kills(home: Path) -> dict[str, Any]:
    """The KILL events the drain executors logged, by executor id."""
    kills = {}
    for log_file in home.glob("run/agent-*-work/slaves/*/frameworks/*/executors/*/runs/latest/recorder.log"):
        executor_id = log_file.parts[-4]
        for line in log_file.read_text().splitlines():
            event = json.loads(line).get("event", {})
            if event.get("type") == "KILL":
                kills[executor_id] = event
    return kills


def drain_body(agent_id: str, seconds: float) -> dict[str, Any]:
    return {"agent_id": {"value": agent_id}, "max_grace_period": {"seconds": seconds}}


def machine(ip: str) -> dict[str, str]:
    return {"hostname": ip, "ip": ip}


# -- scenarios --------------------------------------------------------------------------------------
def scenario_drain(recorder: Recorder, cluster: Cluster, killing_state: bool) -> None:
    """Three tasks on agent A (a command task whose shell ignores SIGTERM, with an 8 s kill policy;
    two tasks of the drain executor, one with a 30 s kill policy, one without), then DRAIN_AGENT
    with a 5 s cap. Terminal updates are acknowledged only after the agents were read (DRAINING),
    then the agents are read again (DRAINED) and A is reactivated."""
    scheduler = Subscription(recorder, framework_info("trace-drain", killing_state), hold_terminal=True)
    a = cluster.agent_id(A_IP)
    offer = offer_on(scheduler, a)
    tasks = [command_task("task-trap", a, "trap 'echo TERM ignored' TERM; while true; do sleep 0.2; done", 8.0),
             executor_task("task-exec-30s", a, 30.0), executor_task("task-exec-none", a)]
    launch(scheduler, offer, tasks)
    wait_running(scheduler, {t["task_id"]["value"] for t in tasks})
    offer_on(scheduler, a)  # A offers what is left: the drain rescinds it
    time.sleep(1.0)  # task-trap's shell has set its trap by now (a drain right at TASK_RUNNING may beat it)
    operator(recorder, "DRAIN_AGENT", {"agent_id": {"value": a}, "max_grace_period": "10secs"},
             note="(r1) max_grace_period in the string form of Mesos' maintenance.md")
    drained_at = time.monotonic()
    operator(recorder, "DRAIN_AGENT", drain_body(a, 5), note="(d1) drain A with a 5 s cap")
    ends: dict[str, float] = {}
    firsts: dict[str, float] = {}
    while len(ends) < len(tasks):
        status = scheduler.next("UPDATE", 60)["update"]["status"]
        firsts.setdefault(status["state"], time.monotonic() - drained_at)
        if status["state"] in ("TASK_KILLED", "TASK_FAILED", "TASK_FINISHED"):
            ends[status["task_id"]["value"]] = round(time.monotonic() - drained_at, 2)
    recorder.note("seconds from DRAIN_AGENT to each task's terminal update", **ends)
    recorder.note("seconds from DRAIN_AGENT to the first update of each state",
                  **{k: round(v, 2) for k, v in firsts.items()})
    operator(recorder, "REACTIVATE_AGENT", {"agent_id": {"value": a}}, note="(r2) reactivate while DRAINING")
    agents_call(recorder, "(s1) terminal updates not yet acknowledged")
    state_slaves(recorder, "(s2) /state, same moment")
    scheduler.acknowledge_all()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        infos = [ag.get("drain_info", {}).get("state") for ag in get_json(cluster.master, "/state")["slaves"]]
        if "DRAINED" in infos:
            break
        time.sleep(0.1)
    agents_call(recorder, "(s3) every terminal update acknowledged")
    state_slaves(recorder, "(s4) /state, same moment")
    recorder.note("KILL events the drain executor received", **executor_kills(cluster.home))
    scheduler.quiet(1.0)
    operator(recorder, "REACTIVATE_AGENT", {"agent_id": {"value": a}}, note="(r3) reactivate once DRAINED")
    offer_on(scheduler, a)
    agents_call(recorder, "(s5) after REACTIVATE_AGENT")
    scheduler.call("TEARDOWN")
    scheduler.close()


def scenario_deactivate(recorder: Recorder, cluster: Cluster) -> None:
    scheduler = Subscription(recorder, framework_info("trace-deactivate", True))
    a, b = cluster.agent_id(A_IP), cluster.agent_id(B_IP)
    offer = offer_on(scheduler, a)
    launch(scheduler, offer, [command_task("task-sleep", a, "sleep 600")])
    wait_running(scheduler, {"task-sleep"})
    offer_on(scheduler, a)
    operator(recorder, "REACTIVATE_AGENT", {"agent_id": {"value": a}}, note="(r1) reactivate an active agent")
    operator(recorder, "DEACTIVATE_AGENT", {"agent_id": {"value": "no-such-agent"}}, note="(r2) an unknown agent")
    operator(recorder, "DRAIN_AGENT", drain_body("no-such-agent", 5), note="(r3) drain an unknown agent")
    scheduler.quiet(0)
    operator(recorder, "DEACTIVATE_AGENT", {"agent_id": {"value": a}}, note="(d1) deactivate A")
    seen = scheduler.quiet(3.0)
    recorder.note("events in the 3 s after DEACTIVATE_AGENT (offers only from B, the task runs on)",
                  types=[e["type"] for e in seen],
                  offered_agents=sorted({o["agent_id"]["value"] for e in seen if e["type"] == "OFFERS"
                                         for o in e["offers"]["offers"]}))
    agents_call(recorder, "(s1) A deactivated")
    state_slaves(recorder, "(s2) /state, same moment")
    operator(recorder, "DEACTIVATE_AGENT", {"agent_id": {"value": a}}, note="(d2) deactivate A again")
    operator(recorder, "REACTIVATE_AGENT", {"agent_id": {"value": a}}, note="(d3) reactivate A")
    offer_on(scheduler, a)
    agents_call(recorder, "(s3) A active again")
    scheduler.call("RECONCILE", {"tasks": []})
    scheduler.next("UPDATE")
    operator(recorder, "DRAIN_AGENT", {"agent_id": {"value": b}}, note="(d4) drain B, which runs nothing, no cap")
    agents_call(recorder, "(s4) B drained at once")
    operator(recorder, "REACTIVATE_AGENT", {"agent_id": {"value": b}}, note="(d5) reactivate B")
    scheduler.call("TEARDOWN")
    scheduler.close()


def window(ip: str, start_ns: int, duration_s: float) -> dict[str, Any]:
    return {"machine_ids": [machine(ip)],
            "unavailability": {"start": {"nanoseconds": start_ns}, "duration": {"nanoseconds": int(duration_s * 1e9)}}}


def scenario_maintenance(recorder: Recorder, cluster: Cluster) -> None:
    """A task on A, then A's machine scheduled 60 s ahead for an hour: rescinds, inverse offers,
    offers with unavailability; unanswered, declined, accepted; the schedule and status read both
    ways; a drain of a scheduled agent; the schedule updated and emptied."""
    scheduler = Subscription(recorder, framework_info("trace-maintenance", True))
    a = cluster.agent_id(A_IP)
    offer = offer_on(scheduler, a)
    launch(scheduler, offer, [command_task("task-sleep", a, "sleep 600")])
    wait_running(scheduler, {"task-sleep"})
    offer_on(scheduler, a)
    start_ns = int((time.time() + 60) * 1e9)
    recorder.literal[str(start_ns)] = "<START_NS_1>"
    operator(recorder, "GET_MAINTENANCE_SCHEDULE", note="(g0) before any schedule")
    recorder.call("/maintenance/schedule", {"windows": [window(A_IP, start_ns, 3600)]},
                  headers={"Content-Type": "application/json"}, note="(m1) schedule A's machine in 60 s, for 1 h")
    posted = time.monotonic()
    inverse = scheduler.next("INVERSE_OFFERS", 10)
    recorder.note("seconds from the schedule to INVERSE_OFFERS", seconds=round(time.monotonic() - posted, 2))
    offer_on(scheduler, a)
    scheduler.quiet(0)
    seen = scheduler.quiet(12.0)
    recorder.note("events in 12 s with the inverse offer unanswered", types=[e["type"] for e in seen])
    recorder.call("/maintenance/schedule", None, headers={}, method="GET", note="(g1) GET /maintenance/schedule")
    operator(recorder, "GET_MAINTENANCE_SCHEDULE", note="(g2)")
    recorder.call("/maintenance/status", None, headers={}, method="GET", note="(g3) unanswered")
    operator(recorder, "GET_MAINTENANCE_STATUS", note="(g4)")
    ids = [o["id"] for o in inverse["inverse_offers"]["inverse_offers"]]
    scheduler.call("DECLINE_INVERSE_OFFERS", {"inverse_offer_ids": ids}, note="(i1) decline, default filter")
    declined = time.monotonic()
    inverse = scheduler.next("INVERSE_OFFERS", 15)
    recorder.note("seconds from the decline to the next INVERSE_OFFERS", seconds=round(time.monotonic() - declined, 2))
    recorder.call("/maintenance/status", None, headers={}, method="GET", note="(g5) declined")
    ids = [o["id"] for o in inverse["inverse_offers"]["inverse_offers"]]
    scheduler.call("ACCEPT_INVERSE_OFFERS", {"inverse_offer_ids": ids, "filters": {"refuse_seconds": 2.0}},
                   note="(i2) accept, 2 s filter")
    accepted = time.monotonic()
    inverse = scheduler.next("INVERSE_OFFERS", 15)
    recorder.note("seconds from the accept to the next INVERSE_OFFERS", seconds=round(time.monotonic() - accepted, 2))
    recorder.call("/maintenance/status", None, headers={}, method="GET", note="(g6) accepted")
    operator(recorder, "GET_MAINTENANCE_STATUS", note="(g7)")
    scheduler.call("ACCEPT_INVERSE_OFFERS", {"inverse_offer_ids": [{"value": "no-such-offer"}]},
                   note="(i3) accept an unknown inverse offer")
    operator(recorder, "DRAIN_AGENT", drain_body(a, 5), note="(r1) drain an agent of a scheduled machine")
    recorder.call("/machine/up", [machine(A_IP)], headers={"Content-Type": "application/json"},
                  note="(r2) /machine/up of a machine that is not DOWN")
    recorder.call("/machine/down", [machine(B_IP)], headers={"Content-Type": "application/json"},
                  note="(r3) /machine/down of a machine in no schedule")
    recorder.call("/maintenance/schedule", {"windows": [{"machine_ids": [], "unavailability": {
        "start": {"nanoseconds": start_ns}}}]}, headers={"Content-Type": "application/json"},
        note="(r4) a window without machines")
    later_ns = start_ns + int(30e9)
    recorder.literal[str(later_ns)] = "<START_NS_2>"
    operator(recorder, "UPDATE_MAINTENANCE_SCHEDULE", {"schedule": {"windows": [window(A_IP, later_ns, 600)]}},
             note="(m2) the window moved 30 s later, for 10 min")
    scheduler.next("INVERSE_OFFERS", 10)
    offer_on(scheduler, a)
    scheduler.quiet(0)
    recorder.call("/maintenance/schedule", {"windows": []}, headers={"Content-Type": "application/json"},
                  note="(m3) the schedule emptied")
    seen = scheduler.quiet(3.0)
    recorder.note("events in 3 s after the schedule was emptied", types=[e["type"] for e in seen])
    recorder.call("/maintenance/status", None, headers={}, method="GET", note="(g8) no schedule")
    scheduler.call("TEARDOWN")
    scheduler.close()


def scenario_machine_down(recorder: Recorder, cluster: Cluster) -> None:
    scheduler = Subscription(recorder, framework_info("trace-machine-down", True))
    a = cluster.agent_id(A_IP)
    offer = offer_on(scheduler, a)
    launch(scheduler, offer, [command_task("task-sleep", a, "sleep 600"), executor_task("task-exec", a)])
    wait_running(scheduler, {"task-sleep", "task-exec"})
    offer_on(scheduler, a)
    start_ns = int((time.time() + 60) * 1e9)
    recorder.literal[str(start_ns)] = "<START_NS_1>"
    recorder.call("/maintenance/schedule", {"windows": [window(A_IP, start_ns, 3600)]},
                  headers={"Content-Type": "application/json"}, note="(m1) schedule A's machine in 60 s")
    scheduler.next("INVERSE_OFFERS", 10)
    offer_on(scheduler, a)
    scheduler.quiet(0)
    recorder.call("/machine/down", [machine(A_IP)], headers={"Content-Type": "application/json"},
                  note="(m2) A's machine down")
    seen = scheduler.quiet(5.0)
    recorder.note("events in 5 s after /machine/down", types=[e["type"] for e in seen])
    pid_file = cluster.home / "run" / f"agent-{cluster.agent_ports[A_IP]}.pid"
    alive = subprocess.run(["kill", "-0", pid_file.read_text().strip()], capture_output=True).returncode == 0
    recorder.note("is the agent process still alive 5 s after /machine/down", alive=alive)
    recorder.call("/maintenance/status", None, headers={}, method="GET", note="(g1) A down")
    state_slaves(recorder, "(s1) /state")
    recorder.call("/maintenance/schedule", {"windows": []}, headers={"Content-Type": "application/json"},
                  note="(r1) removing a DOWN machine from the schedule")
    recorder.call("/machine/up", [machine(A_IP)], headers={"Content-Type": "application/json"},
                  note="(m3) A's machine up")
    recorder.call("/maintenance/status", None, headers={}, method="GET", note="(g2) A up")
    recorder.call("/maintenance/schedule", None, headers={}, method="GET", note="(g3) the schedule after up")
    scheduler.call("RECONCILE", {"tasks": [{"task_id": {"value": "task-sleep"}, "agent_id": {"value": a}}]})
    scheduler.next("UPDATE")
    scheduler.call("TEARDOWN")
    scheduler.close()


SCENARIOS: dict[str, tuple[str, Callable[[Recorder, Cluster], None]]] = {
    "13": ("13-drain-killing-state", lambda r, c: scenario_drain(r, c, True)),
    "14": ("14-drain-no-killing-state", lambda r, c: scenario_drain(r, c, False)),
    "15": ("15-deactivate-reactivate", scenario_deactivate),
    "16": ("16-maintenance-inverse-offers", scenario_maintenance),
    "17": ("17-machine-down-up", scenario_machine_down),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tools", type=Path, required=True, help="the real-mesos tools folder (start-*.sh, stop.sh)")
    parser.add_argument("--port", type=int, default=5050, help="the master's port; the agents take the next two")
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "data" / "mesos-traces")
    parser.add_argument("scenarios", nargs="*", default=sorted(SCENARIOS), help="13 14 15 16 17 (default: all)")
    args = parser.parse_args()
    for key in args.scenarios:
        name, run = SCENARIOS[key]
        with tempfile.TemporaryDirectory(prefix=f"pc-{key}-") as home_text:
            home = Path(home_text)
            cluster = Cluster(args.tools.resolve(), args.port, home, [])
            recorder = Recorder(cluster.master)
            recorder.note(f"Mesos 1.12.0 master 127.0.0.1:{args.port} (in-memory registry, other flags default); "
                          f"agent A {A_IP}:{args.port + 1} '{RESOURCES[A_IP]}', agent B {B_IP}:{args.port + 2} "
                          f"'{RESOURCES[B_IP]}' (POSIX launcher); recorded by tools/record_planned_change.py")
            try:
                for ip in (A_IP, B_IP):
                    recorder.see("AGENT_ID", cluster.agent_id(ip))
                run(recorder, cluster)
            finally:
                cluster.stop()
                if os.environ.get("RECORD_DEBUG"):
                    with open(args.out / f"{name}.raw.jsonl", "w") as raw:
                        raw.writelines(json.dumps(line) + "\n" for line in recorder.lines)
            recorder.write(args.out / f"{name}.jsonl", {
                str(home / "run"): "<MESOS_RUN_DIR>", str(REPO): "<REPO>", sys.executable: "<PYTHON>"})
            print(f"{name}: {len(recorder.lines)} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
