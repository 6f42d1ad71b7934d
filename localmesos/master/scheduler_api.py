"""``POST /api/v1/scheduler``: HTTP-level checks in Mesos' order, then dispatch.

Order (src/master/http.cpp ``Master::Http::scheduler``): authentication (401),
method (405), Content-Type / JSON / protobuf conversion (400/415), call
validation (400), Accept for SUBSCRIBE (406), then SUBSCRIBE streams; other
calls need a known (400), subscribed (403) framework and its current
``Mesos-Stream-Id`` (400) and get ``202 Accepted``.
"""
from __future__ import annotations

from typing import Any

from ..http.auth import BasicAuthenticator
from ..http.calls import decode_call, method_not_allowed, not_acceptable
from ..http.server import APPLICATION_JSON, Request, Response, StreamResponse
from .master import Master
from ..http.protojson import b64decode, is_valid_uuid_bytes

_SUB_MESSAGES = {
    "ACCEPT": "accept", "DECLINE": "decline", "ACCEPT_INVERSE_OFFERS": "accept_inverse_offers",
    "DECLINE_INVERSE_OFFERS": "decline_inverse_offers", "KILL": "kill", "SHUTDOWN": "shutdown",
    "ACKNOWLEDGE": "acknowledge", "ACKNOWLEDGE_OPERATION_STATUS": "acknowledge_operation_status",
    "RECONCILE": "reconcile", "RECONCILE_OPERATIONS": "reconcile_operations", "MESSAGE": "message",
    "REQUEST": "request", "UPDATE_FRAMEWORK": "update_framework",
}


def validate_call(call: dict[str, Any], principal: str | None) -> str | None:
    """validation::scheduler::call::validate."""
    kind = call.get("type")
    if kind is None:
        return "Expecting 'type' to be present"
    if kind == "SUBSCRIBE":
        if "subscribe" not in call:
            return "Expecting 'subscribe' to be present"
        info = call["subscribe"]["framework_info"]
        if info.get("id", {}).get("value", "") != call.get("framework_id", {}).get("value", ""):
            return "'framework_id' differs from 'subscribe.framework_info.id'"
        if principal is not None and "principal" in info and info["principal"] != principal:
            return (f"Authenticated principal '{principal}' does not match principal "
                    f"'{info['principal']}' set in `FrameworkInfo`")
        return None
    if "framework_id" not in call:
        return "Expecting 'framework_id' to be present"
    sub = _SUB_MESSAGES.get(kind)
    if sub is not None and sub not in call:
        return f"Expecting '{sub}' to be present"
    if kind == "ACKNOWLEDGE" and not is_valid_uuid_bytes(b64decode(call["acknowledge"]["uuid"])):
        return "Not a valid UUID"
    if kind == "ACKNOWLEDGE_OPERATION_STATUS":
        acknowledge = call["acknowledge_operation_status"]
        if not is_valid_uuid_bytes(b64decode(acknowledge["uuid"])):
            return "Not a valid UUID"
        if "agent_id" not in acknowledge:
            return "Expecting 'agent_id' to be present"
    if kind == "UPDATE_FRAMEWORK":
        if call["update_framework"]["framework_info"].get("id") != call["framework_id"]:
            return "'framework_id' differs from 'update_framework.framework_info.id'"
    return None


class SchedulerApi:
    def __init__(self, master: Master, authenticator: BasicAuthenticator | None) -> None:
        self._master = master
        self._auth = authenticator

    def handle(self, request: Request) -> Response | StreamResponse:
        principal = None
        if self._auth is not None:
            principal = self._auth.authenticate(request)
            if principal is None:
                return self._auth.unauthorized()
        if request.method != "POST":
            return method_not_allowed(request)
        call = decode_call(request, "SchedulerCall")
        if isinstance(call, Response):
            return call
        error = validate_call(call, principal)
        if error is not None:
            return Response.text(400, f"Failed to validate scheduler::Call: {error}")
        kind = call["type"]
        if kind in ("SUBSCRIBE", "RECONCILE_OPERATIONS") and not request.accepts(APPLICATION_JSON):
            return not_acceptable()
        if kind == "SUBSCRIBE":
            if "Mesos-Stream-Id" in request.headers:
                return Response.text(400, "Subscribe calls should not include the 'Mesos-Stream-Id' header")
            return self._master.subscriptions.subscribe(call["subscribe"], principal)

        master = self._master
        framework = master.cluster.frameworks.get(call["framework_id"]["value"])
        if framework is None:
            return Response.text(400, "Framework cannot be found")
        if principal is not None and principal != framework.info.get("principal"):
            return Response.text(400, f"Authenticated principal '{principal}' does not match principal "
                                      f"'{framework.info.get('principal', '')}' set in `FrameworkInfo`")
        if not framework.connected:
            return Response.text(403, "Framework is not subscribed")
        stream_id = request.headers.get("Mesos-Stream-Id")
        if stream_id is None:
            return Response.text(400, "All non-subscribe calls should include the 'Mesos-Stream-Id' header")
        if stream_id != framework.stream_id:
            return Response.text(400, f"The stream ID '{stream_id}' included in this request didn't match the "
                                      f"stream ID currently associated with framework ID {framework.id}")

        calls = master.scheduler_calls
        if kind == "TEARDOWN":
            calls.teardown(framework)
        elif kind == "ACCEPT":
            calls.accept(framework, call["accept"])
        elif kind == "DECLINE":
            calls.decline(framework, call["decline"])
        elif kind == "REVIVE":
            calls.revive(framework, call.get("revive", {}))
        elif kind == "SUPPRESS":
            calls.suppress(framework, call.get("suppress", {}))
        elif kind == "KILL":
            calls.kill(framework, call["kill"])
        elif kind == "SHUTDOWN":
            calls.shutdown(framework, call["shutdown"])
        elif kind == "ACKNOWLEDGE":
            calls.acknowledge(framework, call["acknowledge"])
        elif kind == "RECONCILE":
            calls.reconcile(framework, call["reconcile"])
        elif kind == "MESSAGE":
            calls.message(framework, call["message"])
        elif kind == "UPDATE_FRAMEWORK":
            status, message = master.subscriptions.update(framework, call["update_framework"])
            return Response.empty(200) if status == 200 else Response.text(status, message)
        elif kind in ("ACCEPT_INVERSE_OFFERS", "DECLINE_INVERSE_OFFERS"):
            calls.answer_inverse_offers(call[kind.lower()], accepted=kind == "ACCEPT_INVERSE_OFFERS")
        elif kind == "UNKNOWN":
            return Response.text(501, "501 Not Implemented.")
        # REQUEST and operation feedback have nothing to act on here.
        return Response.empty(202)
