"""Maintenance over HTTP: the master's ``/maintenance/schedule`` (GET, POST), ``/maintenance/status``,
``/machine/down`` and ``/machine/up``, and the operator API's GET_MAINTENANCE_SCHEDULE,
UPDATE_MAINTENANCE_SCHEDULE, GET_MAINTENANCE_STATUS, START_MAINTENANCE and STOP_MAINTENANCE. The
answers and refusals are Mesos' (traces 16 and 17): 200 with an empty body, or 400 with its words."""
from __future__ import annotations

import json
from typing import Any, Callable

from ..http.calls import method_not_allowed
from ..http.protojson import ProtoError
from ..http.schemas import SCHEMAS
from ..http.server import Request, Response
from .maintenance import Maintenance, MaintenanceError

PATHS = ("/maintenance/schedule", "/maintenance/status", "/machine/down", "/machine/up")


class MaintenanceApi:
    def __init__(self, maintenance: Maintenance) -> None:
        self._maintenance = maintenance

    # -- the master's endpoints ---------------------------------------------------------
    def handle(self, request: Request, path: str) -> Response:
        maintenance = self._maintenance
        if path == "/maintenance/schedule":
            if request.method == "GET":
                return Response.json(200, maintenance.schedule())
            if request.method != "POST":
                return Response.text(405, f"405 Method Not Allowed. Expecting one of {{ 'GET', 'POST' }}, but "
                                          f"received '{request.method}'.", [("Allow", "GET, POST")])
            return _parsed(request, lambda body: SCHEMAS.parse("Schedule", body), maintenance.update_schedule)
        if path == "/maintenance/status":
            if request.method != "GET":
                return method_not_allowed(request, "GET")
            return Response.json(200, maintenance.status())
        if request.method != "POST":
            return method_not_allowed(request)
        change = maintenance.down if path == "/machine/down" else maintenance.up
        return _parsed(request, _machine_ids, change)

    # -- the operator API's calls ---------------------------------------------------------
    def get_schedule(self) -> Response:
        return Response.json(200, {"type": "GET_MAINTENANCE_SCHEDULE",
                                   "get_maintenance_schedule": {"schedule": self._maintenance.schedule()}})

    def get_status(self) -> Response:
        return Response.json(200, {"type": "GET_MAINTENANCE_STATUS",
                                   "get_maintenance_status": {"status": self._maintenance.status()}})

    def update_schedule(self, body: dict[str, Any]) -> Response:
        return _applied(lambda: self._maintenance.update_schedule(body["schedule"]))

    def start(self, body: dict[str, Any]) -> Response:
        return _applied(lambda: self._maintenance.down(body.get("machines", [])))

    def stop(self, body: dict[str, Any]) -> Response:
        return _applied(lambda: self._maintenance.up(body.get("machines", [])))


def _machine_ids(body: Any) -> list[dict[str, Any]]:
    if not isinstance(body, list):
        raise ProtoError("Expecting a JSON array of machines: [{\"hostname\": H, \"ip\": I}, ...]")
    return [SCHEMAS.parse("MachineID", machine) for machine in body]


def _parsed(request: Request, parse: Callable[[Any], Any], change: Callable[[Any], None]) -> Response:
    """JSON, then the protobuf it must be, then the change (each refusal a 400 with its reason)."""
    try:
        value = parse(json.loads(request.body.decode("utf-8", errors="replace")))
    except ValueError as error:  # json.JSONDecodeError and ProtoError alike
        return Response.text(400, str(error))
    return _applied(lambda: change(value))


def _applied(change: Callable[[], None]) -> Response:
    try:
        change()
    except MaintenanceError as error:
        return Response.text(400, str(error))
    return Response.empty(200)
