"""Keeping a job's generated API token where its owner finds it and nobody else can read it.

- Always in this machine's state directory (``live/<name>.token``, mode 0600): the owner's
  ``tfmesos kill|restart NAME`` on this machine reads it from there, as it finds the API's address.
- With the job's state in ZooKeeper and TFMESOS_ZK_AUTH set (``user:password``), also in the job's
  ``api-token`` node under a digest ACL of that user: the owner's ``--zk`` commands, given the same
  variable, read it from anywhere; another team's clients, without the password, cannot.
- With ZooKeeper and no credentials it is not written there (an open ZooKeeper would hand it to
  anyone): said once, with what to do. The job's writes then stay closed to everyone but this
  machine's user (and Marathon, which can remove the app).

The token itself is never shown: only where it is kept.
"""
from __future__ import annotations

import logging
from typing import Callable

from ..core.spec import JobSpec
from ..store.state_store import ZK_AUTH_ENV, StateStore, ZkStore, zk_auth
from . import after_end

log = logging.getLogger("tfmesos.scheduler.api_token_keeper")


def keep(token: str, spec: JobSpec, state_dir: str, store: StateStore | None,
         say: Callable[[str], None]) -> list[Callable[[], None]]:
    """Keep ``token``; returns what removes each copy kept (at the session's close)."""
    drops: list[Callable[[], None]] = []
    local = after_end.local_store(spec, state_dir)
    try:
        local.keep_token(token)
        drops.append(lambda: local.drop_token(token))
        say(f"the API's writes (kill, restart) need the job's token, kept in {local.token_file} (this user only)")
    except OSError as exc:  # an unwritable directory: the owner then needs ZooKeeper's copy
        log.info("cannot keep the API token in %s: %s", local.token_file, exc.strerror)
    if isinstance(store, ZkStore):
        auth = zk_auth()
        if auth is None:
            say(f"the API's token is not kept in ZooKeeper ({ZK_AUTH_ENV} is not set, and an open node would hand "
                f"it to any client): 'tfmesos kill|restart NAME' works from this machine only; set {ZK_AUTH_ENV}="
                "user:password (the package: service.zk_auth_secret) to keep it there under a digest ACL")
        else:
            store.keep_token(token, auth)
            drops.append(lambda: store.drop_token(token, auth))
    return drops
