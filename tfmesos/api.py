"""The scheduler's HTTP API: health for Marathon, status and the ClusterSpec for people and tools.

GET  /v1/health       200 {"healthy": true} while the scheduler runs (Marathon's MESOS_HTTP check)
GET  /v1/status       the job: phase, each task's role, index, host:port, state, restarts
GET  /v1/clusterspec  {"version": n, "cluster": {...}} once every task has an endpoint
GET  /v1/endpoints    ["host:port", ...] of the TensorFlow tasks by role
POST /v1/shutdown     kill every task, tear the framework down, exit (used by undeploy)
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


class ApiServer:
    def __init__(
        self,
        snapshot: Callable[[], dict[str, Any]],
        cluster: Callable[[], dict[str, Any] | None],
        shutdown: Callable[[], None],
        host: str = "127.0.0.1",
        port: int = 0,
    ):
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt: str, *args: Any) -> None:  # keep the console for the job
                pass

            def _reply(self, code: int, body: Any) -> None:
                data = json.dumps(body, indent=1).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                path = self.path.split("?")[0].rstrip("/")
                if path == "/v1/health":
                    self._reply(200, {"healthy": True})
                elif path == "/v1/status":
                    self._reply(200, snapshot())
                elif path == "/v1/clusterspec":
                    spec = cluster()
                    self._reply(200, spec) if spec else self._reply(404, {"error": "not every task is placed yet"})
                elif path == "/v1/endpoints":
                    spec = cluster()
                    self._reply(200, spec["cluster"] if spec else {})
                else:
                    self._reply(404, {"error": f"no such endpoint: {path}"})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                if self.path.rstrip("/") == "/v1/shutdown":
                    self._reply(202, {"shutting_down": True})
                    shutdown()
                else:
                    self._reply(404, {"error": f"no such endpoint: {self.path}"})

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="tfmesos-api", daemon=True)

    @property
    def address(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{host}:{port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
