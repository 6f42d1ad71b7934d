"""HTTP Basic authentication of schedulers (libprocess BasicAuthenticator).

Secrets are compared and dropped; nothing here logs them.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .server import Request, Response
from .protojson import b64decode, base64_error

REALM = "mesos-master-scheduler"


class BasicAuthenticator:
    def __init__(self, credentials: dict[str, str]) -> None:
        self._credentials = dict(credentials)

    def authenticate(self, request: Request) -> str | None:
        """The authenticated principal, or None for a 401."""
        header = request.headers.get("Authorization")
        if header is None:
            return None
        parts = header.split(" ")
        if len(parts) != 2 or parts[0] != "Basic" or base64_error(parts[1]):
            return None
        try:
            decoded = b64decode(parts[1]).decode("utf-8")
        except UnicodeDecodeError:
            return None
        pieces = decoded.split(":")
        if len(pieces) != 2:
            return None
        principal, secret = pieces
        expected = self._credentials.get(principal)
        import hmac  # with OpenSSL's hashes: only a master with credentials checks them

        if expected is None or not hmac.compare_digest(expected.encode(), secret.encode()):
            return None
        return principal

    @staticmethod
    def unauthorized() -> Response:
        return Response.text(401, "401 Unauthorized.", [("WWW-Authenticate", f'Basic realm="{REALM}"')])


def load_credentials(path: Path) -> dict[str, str]:
    """Mesos' credentials file in the JSON form Mesos 1.12 reads,
    ``{"credentials": [{"principal": ..., "secret": ...}]}``; it refuses the older
    'principal secret' lines (checked on a real master), and so does this, in its words, except that
    Mesos quotes the text near the error, which holds secrets: here only its line and column."""
    text = path.read_text()
    try:
        entries = json.loads(text)["credentials"]
        return {entry["principal"]: entry["secret"] for entry in entries}
    except json.JSONDecodeError as exc:
        raise ValueError(f"Invalid json format: syntax error at line {exc.lineno}, column {exc.colno} "
                         "(see --credentials flag)") from None
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{path}: expected {{\"credentials\": [{{\"principal\": ..., \"secret\": ...}}]}} "
                         f"(missing {exc}) (see --credentials flag)") from None


@dataclass(frozen=True)
class _Entity:
    """ACL::Entity: ``{"values": [...]}`` (SOME), ``{"type": "ANY"}`` or ``{"type": "NONE"}``."""

    kind: str  # "SOME", "ANY" or "NONE"
    values: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, raw: Any, where: str) -> "_Entity":
        if not isinstance(raw, dict):
            raise ValueError(f"{where}: expected an object with 'values' or 'type'")
        if "values" in raw:
            values = raw["values"]
            if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                raise ValueError(f"{where}.values: expected a list of strings")
            return cls("SOME", frozenset(values))
        kind = raw.get("type", "ANY")
        if kind not in ("ANY", "NONE"):
            raise ValueError(f"{where}.type: expected ANY or NONE, not {kind!r}")
        return cls(kind)


def _matches(request: _Entity, acl: _Entity) -> bool:
    """Mesos' LocalAuthorizer: does this ACL speak about the request at all?"""
    if request.kind == "NONE":
        return acl.kind == "NONE"
    if request.kind == "ANY":
        return acl.kind in ("ANY", "NONE")
    return acl.kind in ("ANY", "NONE") or request.values <= acl.values


def _allows(request: _Entity, acl: _Entity) -> bool:
    if request.kind == "NONE":
        return True
    if request.kind == "ANY":
        return acl.kind == "ANY"
    return acl.kind == "ANY" or (acl.kind == "SOME" and request.values <= acl.values)


# ACL kinds the embedded master enforces: the JSON key, its subject and its object field.
_KINDS = {"register_frameworks": ("principals", "roles"), "run_tasks": ("principals", "users")}


class Acls:
    """The master's ``--acls`` (docs/authorization.md): the first ACL whose subject and object
    match the request decides; when none matches, ``permissive`` (default true) does."""

    def __init__(self, rules: dict[str, list[tuple[_Entity, _Entity]]], permissive: bool) -> None:
        self._rules = rules
        self.permissive = permissive

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> "Acls":
        if not isinstance(raw, dict):
            raise ValueError("acls: expected a JSON object")
        permissive = raw.get("permissive", True)
        if not isinstance(permissive, bool):
            raise ValueError("acls.permissive: expected true or false")
        rules: dict[str, list[tuple[_Entity, _Entity]]] = {}
        for kind, (subject, obj) in _KINDS.items():
            entries = raw.get(kind, [])
            if not isinstance(entries, list):
                raise ValueError(f"acls.{kind}: expected a list of ACLs")
            rules[kind] = [(_Entity.parse(e.get(subject, {"type": "ANY"}), f"acls.{kind}[{i}].{subject}"),
                            _Entity.parse(e.get(obj, {"type": "ANY"}), f"acls.{kind}[{i}].{obj}"))
                           for i, e in enumerate(entries)]
        return cls(rules, permissive)

    def _approved(self, kind: str, principal: str | None, value: str) -> bool:
        subject = _Entity("SOME", frozenset([principal])) if principal else _Entity("ANY")
        obj = _Entity("SOME", frozenset([value]))
        for acl_subject, acl_object in self._rules.get(kind, []):
            if _matches(subject, acl_subject) and _matches(obj, acl_object):
                return _allows(subject, acl_subject) and _allows(obj, acl_object)
        return self.permissive

    def may_register(self, principal: str | None, role: str) -> bool:
        return self._approved("register_frameworks", principal, role)

    def may_run_task(self, principal: str | None, user: str) -> bool:
        return self._approved("run_tasks", principal, user)


def load_acls(text: str) -> dict[str, Any]:
    """``--acls``: the JSON itself, or a path to it (``file://`` or plain), as Mesos takes it."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        path = Path(stripped[len("file://"):] if stripped.startswith("file://") else stripped)
        try:
            stripped = path.read_text()
        except OSError as exc:
            raise ValueError(f"--acls: cannot read {path}: {exc.strerror}") from None
    try:
        raw = json.loads(stripped)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--acls: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    Acls.from_json(raw)  # validate now: a bad ACL must stop the master from starting
    return raw
