"""Routes of the master's HTTP port."""
from __future__ import annotations

from ..http.calls import method_not_allowed
from ..http.server import Request, Response, StreamResponse
from .master import Master
from .maintenance_api import PATHS as MAINTENANCE_PATHS, MaintenanceApi
from .operator_api import OperatorApi
from .scheduler_api import SchedulerApi
from .metrics import metrics_snapshot
from .state_json import master_state, version_json
from .web_ui import index_page, sandbox_response


class MasterApi:
    def __init__(self, master: Master, scheduler: SchedulerApi, operator: OperatorApi) -> None:
        self._master = master
        self._scheduler = scheduler
        self._operator = operator
        self._maintenance = MaintenanceApi(master.maintenance)

    def handle(self, request: Request) -> Response | StreamResponse:
        path = request.path
        if path.startswith("/master/") and path != "/master/api/v1/scheduler":
            path = path[len("/master"):]
        if path in ("/api/v1/scheduler", "/master/api/v1/scheduler"):
            return self._scheduler.handle(request)
        if path == "/api/v1":
            return self._operator.handle(request)
        if path in MAINTENANCE_PATHS:
            return self._maintenance.handle(request, path)
        if path == "/metrics/snapshot":
            return Response.json(200, metrics_snapshot(self._master)) if request.method == "GET" \
                else method_not_allowed(request, "GET")
        if path in ("/version", "/state", "/state.json", "/health"):
            if request.method != "GET":
                return method_not_allowed(request, "GET")
            if path == "/version":
                return Response.json(200, version_json())
            if path == "/health":
                return Response.empty(200)
            return Response.json(200, master_state(self._master))
        # Where a Mesos master serves its web UI (schedulers' pages link there): a page of our own.
        if request.method == "GET" and path in ("/", "/index.html"):
            return index_page(master_state(self._master))
        if request.method == "GET" and path.startswith("/sandbox/"):
            return sandbox_response(self._master.config.work_dir, request.path[len("/sandbox/"):])
        return Response.text(404, "404 Not Found.")
