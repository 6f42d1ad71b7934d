"""The scheduler's HTTP API: health for Marathon, status, logs and metrics for people and tools.
Its routes are named in ``tfmesos/api/routes.py``, which its clients use too:

GET  /                      the status page (tfmesos/scheduler/web/, polling /v1/status)
GET  /v1/health             200 {"healthy": true} while the scheduler's loop turns, 503 with the reason once it
                            is wedged (Marathon's MESOS_HTTP check restarts it)
GET  /v1/status             the job: phase, progress, each task's role, index, host:port, state, restarts
GET  /v1/clusterspec        {"version": n, "cluster": {...}} once every task has an endpoint
GET  /v1/endpoints          ["host:port", ...] of the TensorFlow tasks by role
GET  /v1/logs/ROLE:INDEX    a chunk of a task's stdout/stderr from its sandbox (see tfmesos.scheduler.task_logs)
GET  /metrics               Prometheus text format
POST /v1/shutdown           kill every task, tear the framework down, exit (tfmesos kill, undeploy)
POST /v1/restart/ROLE:INDEX kill one task; it is relaunched, counted as asked for, not as a failure
POST /v1/update             {"options": {...}, "dry_run": false}: run the job with these options from now on
                            (tfmesos update): 202 with what changes and restarts (200 for a dry run), 400
                            naming each option that cannot change, 409 when the job takes no update now

The POST endpoints need ``Authorization: Bearer <token>``: TFMESOS_API_TOKEN's, else the one the
job's scheduler made and kept for its owner (scheduler/api_token_keeper.py), whom
``tfmesos kill|restart NAME`` finds it for. With ``api_token_reads``, reading needs it too.
"""
from __future__ import annotations

import hmac
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any, Callable
from urllib.parse import parse_qs, urlsplit

from ..api import routes
from ..api.token import TOKEN_ENV
from ..mesos.agent_files import LogError
from ..core.status import StatusSnapshot

STOP_POLL_SECONDS = 0.02  # how often the serving loop looks for stop()
_WEB_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
              ".css": "text/css; charset=utf-8", ".png": "image/png", ".svg": "image/svg+xml"}


class Refused(Exception):
    """An operation that cannot be done now; ``status`` is the HTTP status to answer."""

    def __init__(self, status: int, text: str, problems: list[str] | None = None):
        super().__init__(text)
        self.status = status
        self.problems = problems or [text]  # each a line naming what is wrong (an update's refused options)


@dataclass
class Operations:
    """What the API can do beyond reporting; each is optional (e.g. a finished job has none)."""

    logs: Callable[[str, dict[str, str]], dict[str, Any]] | None = None
    restart: Callable[[str], str] | None = None  # ROLE:INDEX -> what was done; raises Refused
    update: Callable[[Any, bool], dict[str, Any]] | None = None  # (options, dry run) -> the plan; raises Refused
    metrics: Callable[[], tuple[bytes, str]] | None = None  # (body, content type)
    token: str = ""
    token_reads: bool = False  # with a token: reading needs it too (all but /v1/health and the page's files)
    health: Callable[[], tuple[bool, str]] | None = None  # (healthy, why not) of the job's loop; None: healthy


def web_asset(name: str) -> tuple[bytes, str] | None:
    """A file of the status page, shipped in the package (no CDN: clusters may be offline)."""
    if "/" in name or name.startswith("."):
        return None
    suffix = name[name.rfind("."):]
    if suffix not in _WEB_TYPES:
        return None
    ref = resources.files("tfmesos.scheduler") / "web" / name
    if not ref.is_file():
        return None
    return ref.read_bytes(), _WEB_TYPES[suffix]


class ApiServer:
    def __init__(
        self,
        snapshot: Callable[[], StatusSnapshot],
        cluster: Callable[[], dict[str, Any] | None],
        shutdown: Callable[[], None],
        host: str = "127.0.0.1",
        port: int = 0,
        ops: Operations | None = None,
    ):
        # What the handlers serve; a job that ended swaps it for its final status (serve_ended).
        self._serving = (snapshot, cluster, ops or Operations(), shutdown)
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt: str, *args: Any) -> None:  # keep the console for the job
                pass

            def _send(self, code: int, data: bytes, content_type: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(data)

            def _reply(self, code: int, body: Any) -> None:
                self._send(code, json.dumps(body, indent=1).encode(), "application/json")

            def do_GET(self) -> None:  # noqa: N802
                snapshot, cluster, ops, _ = api._serving
                url = urlsplit(self.path)
                path = url.path.rstrip("/") or "/"
                query = {k: v[-1] for k, v in parse_qs(url.query).items()}
                page_file = routes.is_page_file(path)
                if ops.token_reads and not page_file and path != routes.HEALTH and not self._authorized():
                    self._reply(401, {"error": f"reading this job's API needs its token: send 'Authorization: "
                                               f"Bearer <token>' ({TOKEN_ENV}; else 'tfmesos status|logs NAME' read "
                                               "the one kept for the job's owner, with the state directory or --zk "
                                               "it ran with)"})
                elif path == routes.HEALTH:
                    healthy, why = ops.health() if ops.health is not None else (True, "")
                    self._reply(200, {"healthy": True}) if healthy else self._reply(503, {"healthy": False, "reason": why})
                elif path == routes.STATUS:
                    self._reply(200, snapshot().to_json())
                elif path == routes.CLUSTERSPEC:
                    spec = cluster()
                    self._reply(200, spec) if spec else self._reply(404, {"error": "not every task is placed yet"})
                elif path == routes.ENDPOINTS:
                    spec = cluster()
                    self._reply(200, spec["cluster"] if spec else {})
                elif (task := routes.task_of(routes.LOGS, path)) is not None and ops.logs is not None:
                    try:
                        self._reply(200, ops.logs(task, query))
                    except LogError as exc:
                        self._reply(exc.status, {"error": str(exc)})
                elif path == routes.METRICS and ops.metrics is not None:
                    self._send(200, *ops.metrics())
                elif page_file:
                    name = path[len(routes.PAGE_FILES):] if path.startswith(routes.PAGE_FILES) else "index.html"
                    asset = web_asset(name)
                    self._send(200, *asset) if asset else self._reply(404, {"error": f"no such file: {path}"})
                else:
                    self._reply(404, {"error": f"no such endpoint: {path}"})

            def _authorized(self) -> bool:
                ops = api._serving[2]
                if not ops.token:
                    return True
                given = self.headers.get("Authorization", "")
                return given.startswith("Bearer ") and hmac.compare_digest(given[7:].strip(), ops.token)

            def do_POST(self) -> None:  # noqa: N802
                ops, shutdown = api._serving[2:]
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                path = urlsplit(self.path).path.rstrip("/")
                task = routes.task_of(routes.RESTART, path)
                if path not in (routes.SHUTDOWN, routes.UPDATE) and task is None:
                    self._reply(404, {"error": f"no such endpoint: {path}"})
                elif task is not None and not ops.restart:
                    self._reply(409, {"error": "this job takes no restart requests: it has ended, or it runs under "
                                               "tfmesos.cluster() or tfrun, whose tasks relaunch by their restart_policy"})
                elif path == routes.UPDATE and not ops.update:
                    self._reply(409, {"error": "this job takes no update: it has ended, or it runs under "
                                               "tfmesos.cluster() or tfrun, whose options are the program's"})
                elif not self._authorized():
                    self._reply(401, {"error": f"this job's API needs its token: send 'Authorization: Bearer <token>' "
                                               f"({TOKEN_ENV}; else 'tfmesos kill|restart NAME' reads the one kept "
                                               "for the job's owner, with the state directory or --zk it ran with)"})
                elif path == routes.SHUTDOWN:
                    # The phase before it: an ended job's API (--keep-serving) only stops serving.
                    phase = api._serving[0]().phase
                    shutdown()  # only asks the scheduler's thread to stop: quick
                    self._reply(202, {"shutting_down": True, "phase": phase})
                elif path == routes.UPDATE:
                    assert ops.update is not None
                    try:
                        asked = json.loads(body or b"null")
                    except ValueError:
                        asked = None
                    if not isinstance(asked, dict) or not isinstance(asked.get("options"), dict):
                        self._reply(400, {"error": "the body is not {\"options\": {...}, \"dry_run\": false}: "
                                                   "expected the job's options as a JSON object"})
                        return
                    dry_run = bool(asked.get("dry_run"))
                    try:
                        self._reply(200 if dry_run else 202, ops.update(asked["options"], dry_run))
                    except Refused as exc:
                        self._reply(exc.status, {"error": str(exc), "problems": exc.problems})
                else:
                    assert ops.restart is not None and task is not None
                    try:
                        self._reply(202, {"restarting": ops.restart(task)})
                    except Refused as exc:
                        self._reply(exc.status, {"error": str(exc)})

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        # stop() waits for the serving loop to see it: at most a poll interval (0.5 s by default) on
        # the path from the job's end to the command's exit.
        self._thread = threading.Thread(target=self._server.serve_forever, args=(STOP_POLL_SECONDS,),
                                        name="tfmesos-api", daemon=True)

    @property
    def address(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{host}:{port}"

    def start(self) -> None:
        self._thread.start()

    def serve_ended(self, snapshot: Callable[[], StatusSnapshot], ops: Operations, shutdown: Callable[[], None]) -> None:
        """From now on serve a job that is over: its final status, no ClusterSpec, only what
        ``ops`` still offers (logs and metrics, not restart), POST /v1/shutdown calls ``shutdown``.
        The address stays: an open page goes on polling it."""
        self._serving = (snapshot, lambda: None, ops, shutdown)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
