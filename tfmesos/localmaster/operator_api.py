"""``POST /api/v1`` on the master (operator API), MARK_AGENT_GONE only."""
from __future__ import annotations

from .calls import decode_call, method_not_allowed
from .httpserver import Request, Response
from .master import Master

# master::Call types real Mesos implements; only MARK_AGENT_GONE is emulated.
_KNOWN_TYPES = {
    "GET_HEALTH", "GET_FLAGS", "GET_VERSION", "GET_METRICS", "GET_LOGGING_LEVEL", "SET_LOGGING_LEVEL",
    "LIST_FILES", "READ_FILE", "GET_STATE", "GET_AGENTS", "GET_FRAMEWORKS", "GET_EXECUTORS",
    "GET_OPERATIONS", "GET_TASKS", "GET_ROLES", "GET_WEIGHTS", "UPDATE_WEIGHTS", "GET_MASTER",
    "SUBSCRIBE", "RESERVE_RESOURCES", "UNRESERVE_RESOURCES", "CREATE_VOLUMES", "DESTROY_VOLUMES",
    "GROW_VOLUME", "SHRINK_VOLUME", "GET_MAINTENANCE_STATUS", "GET_MAINTENANCE_SCHEDULE",
    "UPDATE_MAINTENANCE_SCHEDULE", "START_MAINTENANCE", "STOP_MAINTENANCE", "DRAIN_AGENT",
    "DEACTIVATE_AGENT", "REACTIVATE_AGENT", "GET_QUOTA", "UPDATE_QUOTA", "SET_QUOTA", "REMOVE_QUOTA",
    "TEARDOWN", "MARK_AGENT_GONE",
}


class OperatorApi:
    def __init__(self, master: Master) -> None:
        self._master = master

    def handle(self, request: Request) -> Response:
        if request.method != "POST":
            return method_not_allowed(request)
        call = decode_call(request, "OperatorCall")
        if isinstance(call, Response):
            return call
        kind = call.get("type")
        if kind not in _KNOWN_TYPES:
            return Response.text(400, "Failed to validate master::Call: Expecting 'type' to be present")
        if kind != "MARK_AGENT_GONE":
            return Response.text(501, f"{kind} is not implemented by the embedded master")
        if "mark_agent_gone" not in call:
            return Response.text(400, "Failed to validate master::Call: "
                                      "Expecting 'mark_agent_gone' to be present")
        status, message = self._master.mark_agent_gone(call["mark_agent_gone"]["agent_id"]["value"])
        return Response.empty(status) if status == 200 else Response.text(status, message)
