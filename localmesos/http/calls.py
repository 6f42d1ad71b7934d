"""Decoding a v1 API call body the way Mesos' HTTP handlers do."""
from __future__ import annotations

import json
from typing import Any

from .server import APPLICATION_JSON, APPLICATION_PROTOBUF, Request, Response
from .protojson import ProtoError
from .schemas import SCHEMAS


def method_not_allowed(request: Request, allowed: str = "POST") -> Response:
    return Response.text(405, f"405 Method Not Allowed. Expecting one of {{ '{allowed}' }}, "
                              f"but received '{request.method}'.", [("Allow", allowed)])


def decode_call(request: Request, schema: str) -> dict[str, Any] | Response:
    """Content-Type check, JSON parse, JSON -> protobuf conversion (or the 4xx reply)."""
    content_type = request.headers.get("Content-Type")
    if content_type is None:
        return Response.text(400, "Expecting 'Content-Type' to be present")
    if content_type == APPLICATION_PROTOBUF:
        # Mesos would accept protobuf; the embedded master speaks JSON only.
        return Response.text(415, f"Expecting 'Content-Type' of {APPLICATION_JSON} "
                                  "(the embedded master does not parse protobuf)")
    if content_type != APPLICATION_JSON:
        return Response.text(415, f"Expecting 'Content-Type' of {APPLICATION_JSON} or {APPLICATION_PROTOBUF}")
    text = request.body.decode("utf-8", errors="replace")
    try:
        value = json.loads(text)
    except ValueError as error:
        line = getattr(error, "lineno", 1)
        position = getattr(error, "pos", len(text))
        near = text[position:].split("\n", 1)[0]
        return Response.text(400, f"Failed to parse body into JSON: syntax error at line {line} near: {near}")
    try:
        return SCHEMAS.parse(schema, value)
    except ProtoError as error:
        return Response.text(400, f"Failed to convert JSON into Call protobuf: {error}")


def not_acceptable() -> Response:
    return Response.text(406, "Expecting 'Accept' to allow 'application/x-protobuf' or 'application/json'")
