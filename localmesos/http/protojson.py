"""JSON -> protobuf conversion rules of Mesos (stout ``protobuf::parse``).

Real Mesos parses every JSON call into a protobuf message before looking at
it.  That step decides which inputs are rejected (missing required fields,
wrong JSON types, bad base64) and silently normalises others (unknown keys and
unknown optional enum values dropped, ``null`` = unset, numbers given as
strings accepted, integers given to doubles become doubles).  This module
replays those rules on plain dicts against the schemas in :mod:`.schemas`,
returning a normalised dict.  Sub-messages without a schema pass through
untouched.
"""
from __future__ import annotations

import base64
import binascii
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

_B64_INVALID = re.compile(r"[^A-Za-z0-9+/\s]")  # \s: str.isspace()'s whitespace
# The same set as bytes, for the common case: an ASCII text checked by bytes.translate (C speed).
_B64_VALID = bytes(c for c in range(128) if chr(c).isalnum() or chr(c) in "+/" or chr(c).isspace())


class ProtoError(ValueError):
    """The text Mesos puts after 'Failed to convert JSON into Call protobuf: '."""


@dataclass(frozen=True)
class Field:
    kind: str  # string | bytes | double | int | bool | enum | message | raw
    ref: str | tuple[str, ...] | None = None  # message name or enum values
    required: bool = False
    repeated: bool = False


@dataclass
class Message:
    name: str
    fields: dict[str, Field] = field(default_factory=dict)


class Registry:
    def __init__(self) -> None:
        self._messages: dict[str, Message] = {}

    def define(self, message_name: str, /, **fields: Field) -> None:
        self._messages[message_name] = Message(message_name, dict(fields))

    def get(self, name: str) -> Message:
        return self._messages[name]

    def parse(self, name: str, value: Any) -> dict[str, Any]:
        """Convert ``value`` like ``protobuf::parse<name>`` and check required fields."""
        if not isinstance(value, dict):
            raise ProtoError("Expecting a JSON object")
        result = self._parse_message(self.get(name), value)
        missing = self.missing_required(name, result)
        if missing:
            raise ProtoError("Missing required fields: " + ", ".join(missing))
        return result

    def ordered(self, name: str, value: dict[str, Any]) -> dict[str, Any]:
        """Re-order top-level keys by declaration order (how Mesos renders JSON)."""
        fields = self.get(name).fields
        result = {k: value[k] for k in fields if k in value}
        result.update({k: v for k, v in value.items() if k not in result})
        return result

    # -- conversion ---------------------------------------------------------
    def _parse_message(self, message: Message, obj: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        # stout walks the JSON object in key order (it is a std::map).
        for key in sorted(obj):
            spec = message.fields.get(key)
            if spec is None:
                continue  # unknown keys are ignored
            value = obj[key]
            if value is None:
                continue
            if isinstance(value, list):
                if not spec.repeated:
                    raise ProtoError(f"Not expecting a JSON array for field '{key}'")
                items = []
                for element in value:
                    if element is None:
                        continue
                    converted = self._parse_value(key, spec, element)
                    if converted is not _DROP:
                        items.append(converted)
                if items:
                    out[key] = out.get(key, []) + items
                continue
            converted = self._parse_value(key, spec, value)
            if converted is _DROP:
                continue
            if spec.repeated:
                out.setdefault(key, []).append(converted)
            else:
                out[key] = converted
        # Keep the schema's field order for readable echoes.
        return {k: out[k] for k in message.fields if k in out}

    def _parse_value(self, key: str, spec: Field, value: Any) -> Any:
        kind = spec.kind
        if kind == "raw":
            return value
        if kind == "message":
            if not isinstance(value, dict):
                raise ProtoError(f"Not expecting a JSON {_json_type(value)} for field '{key}'")
            return self._parse_message(self.get(spec.ref), value)  # type: ignore[arg-type]
        if isinstance(value, dict):
            raise ProtoError(f"Not expecting a JSON object for field '{key}'")
        if kind == "string":
            if not isinstance(value, str):
                raise ProtoError(f"Not expecting a JSON {_json_type(value)} for field '{key}'")
            return value
        if kind == "bytes":
            if not isinstance(value, str):
                raise ProtoError(f"Not expecting a JSON {_json_type(value)} for field '{key}'")
            error = base64_error(value)
            if error:
                raise ProtoError(f"Failed to base64 decode bytes field '{key}': {error}")
            return value
        if kind == "enum":
            if not isinstance(value, str):
                raise ProtoError(f"Not expecting a JSON {_json_type(value)} for field '{key}'")
            if value not in spec.ref:  # type: ignore[operator]
                if spec.required:
                    raise ProtoError(f"Failed to find enum for '{value}'")
                return _DROP  # proto2: unknown optional enum values are discarded
            return value
        if kind == "bool":
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value in ("true", "false"):
                return value == "true"
            raise ProtoError(f"Not expecting a JSON {_json_type(value)} for field '{key}'")
        if kind in ("double", "int"):
            if isinstance(value, bool):
                raise ProtoError(f"Not expecting a JSON boolean for field '{key}'")
            if isinstance(value, str):
                number = _number_from_string(key, value, kind)
            elif isinstance(value, (int, float)):
                number = value
            else:
                raise ProtoError(f"Not expecting a JSON {_json_type(value)} for field '{key}'")
            if kind == "double":
                return float(number)
            return int(number)
        raise AssertionError(f"unknown field kind {kind}")

    # -- required fields ----------------------------------------------------
    def missing_required(self, name: str, value: dict[str, Any], prefix: str = "") -> list[str]:
        """Like protobuf's FindInitializationErrors (paths of unset required fields)."""
        message = self.get(name)
        missing = [prefix + k for k, spec in message.fields.items() if spec.required and k not in value]
        for key, spec in message.fields.items():
            if spec.kind != "message" or key not in value:
                continue
            if spec.repeated:
                for index, element in enumerate(value[key]):
                    missing += self.missing_required(spec.ref, element, f"{prefix}{key}[{index}].")  # type: ignore[arg-type]
            else:
                missing += self.missing_required(spec.ref, value[key], f"{prefix}{key}.")  # type: ignore[arg-type]
        return missing


_DROP = object()


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def _number_from_string(key: str, text: str, kind: str) -> float | int:
    if kind == "double" and text in ("Infinity", "-Infinity"):
        return math.inf if text == "Infinity" else -math.inf
    try:
        number = json.loads(text)
    except ValueError:
        number = None
    if isinstance(number, bool) or not isinstance(number, (int, float)):
        raise ProtoError(f"Failed to parse '{text}' as a JSON number for field '{key}': "
                         f"syntax error at line 1 near: {text}")
    return number


def base64_error(text: str) -> str | None:
    """stout's lenient decoder: stops at '=', skips whitespace, rejects the rest.

    TaskInfo.data is kilobytes (a big gang's ClusterSpec: tens), checked on every ACCEPT: an
    ASCII text is checked by ``bytes.translate``; the regex finds the character to name."""
    end = _end_of_data(text)
    if text.isascii() and not text.encode("ascii", "strict")[:end].translate(None, _B64_VALID):
        return None
    bad = _B64_INVALID.search(text, 0, end)
    return f"Invalid character '{bad.group()}'" if bad else None


def _end_of_data(text: str) -> int:
    end = text.find("=")
    return len(text) if end < 0 else end


def b64decode(text: str) -> bytes:
    """Decode the way stout does (after :func:`base64_error` said it is fine)."""
    core = "".join(c for c in text.split("=", 1)[0] if not c.isspace())
    core += "=" * (-len(core) % 4)
    try:
        return base64.b64decode(core)
    except binascii.Error:
        # A dangling single character decodes to nothing in stout.
        return base64.b64decode(core[: len(core) - len(core) % 4 - 4] or b"")


def b64encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def is_valid_uuid_bytes(raw: bytes) -> bool:
    """stout UUID::fromBytes: 16 bytes with an RFC 4122 version (1-5)."""
    return len(raw) == 16 and 1 <= (raw[6] >> 4) <= 5
