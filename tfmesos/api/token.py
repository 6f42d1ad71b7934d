"""The scheduler API's token as its clients send it (`tfmesos status/logs/kill/restart`).

A secret like MESOS_SECRET: read from the environment, sent only as a header, never printed."""
from __future__ import annotations

import os

TOKEN_ENV = "TFMESOS_API_TOKEN"


def token_header() -> dict[str, str]:
    token = os.environ.get(TOKEN_ENV, "")
    return {"Authorization": f"Bearer {token}"} if token else {}
