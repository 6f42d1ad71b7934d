"""Loopback stand-ins for the two HTTP APIs that deploy/undeploy talk to (no Marathon is
installable here): Marathon's documented ``/v2/apps`` endpoints and the scheduler's
``/v1/shutdown`` + ``/v1/status``. Every request is appended to one shared ``log``, so a
test can check the order of what happened.
"""
from __future__ import annotations

import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


class _Server:
    def __init__(self, handle: Callable[[str, str, Any], tuple[int, Any]]):
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                code, reply = handle(self.command, self.path, body)
                data = json.dumps(reply).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = _serve  # noqa: N815

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class Scheduler(_Server):
    """After ``POST /v1/shutdown`` the job reports FINISHING once, then KILLED (stopped on request)."""

    def __init__(self, log: list[str]):
        self.phases = ["RUNNING"]
        self.version: int | None = None  # of the status served; None: served without one (before versioning)
        self.log = log
        super().__init__(self._handle)

    def _handle(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        self.log.append(f"scheduler {method} {path}")
        if method == "POST" and path == "/v1/shutdown":
            self.phases = ["FINISHING", "KILLED"]
            return 202, {"shutting_down": True}
        if method == "GET" and path == "/v1/status":
            phase = self.phases.pop(0) if len(self.phases) > 1 else self.phases[0]
            versioned = {} if self.version is None else {"version": self.version}
            return 200, {"name": "job", "phase": phase, "tasks": [], **versioned}
        return 404, {"error": f"no such endpoint: {path}"}


class Marathon(_Server):
    """Apps keyed by id. A deleted app stays listed for ``gets_until_gone`` GETs, as Marathon
    removes it through a deployment; its one task points at ``task_endpoint``."""

    def __init__(self, log: list[str], task_endpoint: tuple[str, int], gets_until_gone: int = 2):
        self.apps: dict[str, dict[str, Any]] = {}
        self.deleting: dict[str, int] = {}
        self.posted: list[dict[str, Any]] = []
        self.log = log
        self.task_endpoint = task_endpoint
        self.gets_until_gone = gets_until_gone
        super().__init__(self._handle)

    def _task(self, app_id: str) -> dict[str, Any]:
        host, port = self.task_endpoint
        return {
            "id": app_id.strip("/").replace("/", "_") + "." + uuid.uuid4().hex,
            "appId": app_id,
            "host": host,
            "ports": [port],
            "servicePorts": [10000],
            "slaveId": "agent-1",
            "state": "TASK_RUNNING",
            "stagedAt": "2026-01-01T00:00:00.000Z",
            "startedAt": "2026-01-01T00:00:01.000Z",
            "version": self.apps[app_id]["version"],
        }

    def _handle(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        route = path.split("?")[0]
        self.log.append(f"marathon {method} {route}")
        if not route.startswith("/v2/apps"):
            return 404, {"message": f"no route {route}"}
        rest = route[len("/v2/apps"):]
        if method == "POST" and rest in ("", "/"):
            return self._create(body)
        wants_tasks = rest.endswith("/tasks")
        app_id = rest[: -len("/tasks")] if wants_tasks else rest
        if app_id not in self.apps:
            return 404, {"message": f"App '{app_id}' does not exist"}
        if method == "DELETE" and not wants_tasks:
            self.deleting[app_id] = self.gets_until_gone
            return 200, {"version": "2026-01-01T00:00:02.000Z", "deploymentId": str(uuid.uuid4())}
        if method == "GET" and wants_tasks:
            return 200, {"tasks": [self._task(app_id)]}
        if method == "GET":
            if app_id in self.deleting:
                self.deleting[app_id] -= 1
                if self.deleting[app_id] < 0:
                    del self.apps[app_id], self.deleting[app_id]
                    return 404, {"message": f"App '{app_id}' does not exist"}
            return 200, {"app": self.apps[app_id]}
        return 405, {"message": f"{method} not allowed on {route}"}

    def _create(self, body: dict[str, Any]) -> tuple[int, Any]:
        self.posted.append(body)
        if body["id"] in self.apps:
            return 409, {"message": f"An app with id [{body['id']}] already exists."}
        app = {**body, "version": "2026-01-01T00:00:00.000Z"}
        self.apps[body["id"]] = app
        return 201, {**app, "deployments": [{"id": str(uuid.uuid4())}]}
