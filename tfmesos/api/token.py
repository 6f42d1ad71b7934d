"""The scheduler API's token as its clients send it (`tfmesos status/logs/kill/restart`) and as the
scheduler expects it.

A secret like MESOS_SECRET: read from the environment, sent only as a header, never printed. A
token read from a file or a DC/OS secret often ends in a newline: surrounding whitespace is not
part of it (on both sides), and a control character inside is refused without quoting the token
(a header cannot carry it, and http.client's error would quote it)."""
from __future__ import annotations

import os
import secrets
from typing import Mapping

from ..errors import UsageError

TOKEN_ENV = "TFMESOS_API_TOKEN"
TOKEN_BYTES = 32  # a generated token's randomness: 256 bits


def new_token() -> str:
    """A job's own token, made when none was given: URL-safe, so that it fits a header and a
    page's ``#token=`` as it is."""
    return secrets.token_urlsafe(TOKEN_BYTES)


_kept_for_owner = [""]  # a client's: the token its job's scheduler kept for the owner (use_kept)


def use_kept(token: str) -> None:
    """A client command found the job's own token where its scheduler kept it for the owner
    (``tfmesos.client.records.token_for``): its requests send it when TFMESOS_API_TOKEN is unset."""
    _kept_for_owner[0] = token


def api_token(environ: Mapping[str, str] = os.environ) -> str:
    """The token ("" for none): TFMESOS_API_TOKEN's, else one ``use_kept`` was given; UsageError
    naming the variable when it cannot be a header."""
    token = environ.get(TOKEN_ENV, "").strip() or (_kept_for_owner[0] if environ is os.environ else "")
    if any(ord(c) < 32 or ord(c) == 127 for c in token):
        raise UsageError(TOKEN_ENV, "the token holds a control character (a line break?), which an HTTP "
                         "header cannot carry", "set it to the token alone")
    return token


def token_header(token: str | None = None) -> dict[str, str]:
    """The header that carries ``token`` (else TFMESOS_API_TOKEN's), or none."""
    token = api_token() if token is None else token
    return {"Authorization": f"Bearer {token}"} if token else {}
