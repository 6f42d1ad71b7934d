"""The agent's HTTP endpoints: ``POST /api/v1/executor``, ``GET /state`` and ``/files/*``.

Checks follow src/slave/http.cpp ``Http::executor``: method, Content-Type,
JSON -> protobuf, validateExecutorCall, Accept (SUBSCRIBE), unknown
framework / executor (400), not yet subscribed (403).  A call that passes
goes to the agent's ``executor_sessions.ExecutorSessions``.
"""
from __future__ import annotations

from typing import Any, Callable

from .agent import Agent
from ..http.calls import decode_call, method_not_allowed, not_acceptable
from .containers import ExecutorState
from .files_api import FilesApi
from ..http.server import APPLICATION_JSON, Request, Response, StreamResponse
from ..http.protojson import b64decode, is_valid_uuid_bytes
from ..master.state_json import agent_state

_PREFIX = "/slave(1)"


def validate_executor_call(call: dict[str, Any]) -> str | None:
    """common::validation::validateExecutorCall."""
    kind = call.get("type")
    if kind is None:
        return "Expecting 'type' to be present"
    executor_id = call["executor_id"]["value"]
    framework_id = call["framework_id"]["value"]
    if kind == "SUBSCRIBE" and "subscribe" not in call:
        return "Expecting 'subscribe' to be present"
    if kind == "UPDATE":
        if "update" not in call:
            return "Expecting 'update' to be present"
        status = call["update"]["status"]
        if "uuid" not in status:
            return "Expecting 'uuid' to be present"
        if not is_valid_uuid_bytes(b64decode(status["uuid"])):
            return "Not a valid UUID"
        if "executor_id" in status and status["executor_id"]["value"] != executor_id:
            return (f"ExecutorID in Call: {executor_id} does not match ExecutorID in TaskStatus: "
                    f"{status['executor_id']['value']}")
        if status.get("source") != "SOURCE_EXECUTOR":
            return (f"Received Call from executor {executor_id} of framework {framework_id} with invalid "
                    "source, expecting 'SOURCE_EXECUTOR'")
        if status["state"] == "TASK_STAGING":
            return (f"Received TASK_STAGING from executor {executor_id} of framework {framework_id} "
                    "which is not allowed")
    if kind == "MESSAGE" and "message" not in call:
        return "Expecting 'message' to be present"
    return None


class AgentApi:
    def __init__(self, agent: Agent, master_hostname: Callable[[], str]) -> None:
        self._agent = agent
        self._master_hostname = master_hostname
        self._files = FilesApi(agent)

    def handle(self, request: Request) -> Response | StreamResponse:
        path = request.path
        if path.startswith(_PREFIX):
            path = path[len(_PREFIX):] or "/"
        if path == "/api/v1/executor":
            return self._executor(request)
        if path in ("/state", "/state.json"):
            if request.method != "GET":
                return method_not_allowed(request, "GET")
            return Response.json(200, agent_state(self._agent, self._master_hostname()))
        if path == "/health":
            return Response.empty(200)
        if path.startswith("/files/"):
            return self._files.handle(path, request)
        return Response.text(404, "404 Not Found.")

    def _executor(self, request: Request) -> Response | StreamResponse:
        agent = self._agent
        if request.method != "POST":
            return method_not_allowed(request)
        call = decode_call(request, "ExecutorCall")
        if isinstance(call, Response):
            return call
        error = validate_executor_call(call)
        if error is not None:
            return Response.text(400, f"Failed to validate Executor::Call: {error}")
        kind = call["type"]
        if kind == "SUBSCRIBE" and not request.accepts(APPLICATION_JSON):
            return not_acceptable()
        if kind == "HEARTBEAT":
            return Response.empty(202)
        framework = agent.frameworks.get(call["framework_id"]["value"])
        if framework is None:
            return Response.text(400, "Framework cannot be found")
        executor = framework.executors.get(call["executor_id"]["value"])
        if executor is None or executor.command_task:
            return Response.text(400, "Executor cannot be found")
        if executor.state is ExecutorState.REGISTERING and kind != "SUBSCRIBE":
            return Response.text(403, "Executor is not subscribed")
        if kind == "SUBSCRIBE":
            return agent.sessions.subscribe(executor, call["subscribe"])
        if kind == "UPDATE":
            agent.sessions.update(executor, call["update"]["status"])
            return Response.empty(202)
        if kind == "MESSAGE":
            agent.sessions.message(executor, call["message"]["data"])
            return Response.empty(202)
        return Response.text(501, "501 Not Implemented.")
