"""HTTP Basic authentication of schedulers (libprocess BasicAuthenticator).

Secrets are compared and dropped; nothing here logs them.
"""
from __future__ import annotations

import hmac
import json
from pathlib import Path

from .httpserver import Request, Response
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
        if expected is None or not hmac.compare_digest(expected.encode(), secret.encode()):
            return None
        return principal

    @staticmethod
    def unauthorized() -> Response:
        return Response.text(401, "401 Unauthorized.", [("WWW-Authenticate", f'Basic realm="{REALM}"')])


def load_credentials(path: Path) -> dict[str, str]:
    """Mesos' credentials file: 'principal secret' lines, or the JSON form."""
    text = path.read_text()
    if text.lstrip().startswith("{"):
        entries = json.loads(text).get("credentials", [])
        return {entry["principal"]: entry["secret"] for entry in entries}
    credentials: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2:
            raise ValueError(f"{path}:{number}: expected 'principal secret'")
        credentials[parts[0]] = parts[1]
    return credentials
