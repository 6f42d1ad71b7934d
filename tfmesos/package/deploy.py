"""Put the scheduler app on Marathon and take it off again (``tfmesos deploy`` / ``undeploy``).

Undeploying asks the scheduler to finish first (``POST /v1/shutdown`` on its API, found from
Marathon's task list as ``host:ports[0]``): that kills the job's tasks and tears the framework
down. Only then is the app deleted, and we wait until Marathon no longer knows it. Deleting
first would leave the framework and its tasks registered until ``service.failover_timeout``.
"""
from __future__ import annotations

import collections.abc
import time
import types
from dataclasses import dataclass, field
from typing import Any, Callable

import marathon.util
import requests
from marathon import MarathonApp, MarathonClient
from marathon.exceptions import ConflictError, MarathonError, MarathonHttpError, NoResponseError, NotFoundError

from ..core.phase import ENDED_PHASES
from ..core.status import NewerStatusError, StatusSnapshot
from ..api import routes
from ..api.token import TOKEN_ENV, token_header
from ..errors import redact_url

DONE_PHASES = ENDED_PHASES  # phases of GET /v1/status once the job is over


class DeployError(Exception):
    """Something the user has to act on; the message says what."""


def _python310_compat() -> None:
    """marathon 0.13 serializes with ``collections.Iterable``, gone since Python 3.10; hand its
    util module the ``collections.abc`` name instead, without touching the stdlib module."""
    if not hasattr(marathon.util.collections, "Iterable"):
        marathon.util.collections = types.SimpleNamespace(Iterable=collections.abc.Iterable)


def _client(url: str) -> MarathonClient:
    _python310_compat()
    return MarathonClient(url)


def app_id(name: str) -> str:
    return "/" + name.strip("/")


def _path_id(name: str) -> str:
    """The id as the marathon library puts it after /v2/apps/ (which adds the slash itself)."""
    return name.strip("/")


def _http_problem(exc: MarathonHttpError) -> str:
    details = getattr(exc, "error_details", None) or []
    lines = [f"HTTP {exc.status_code} {exc.error_message}"]
    for item in details if isinstance(details, list) else [details]:
        if isinstance(item, dict):
            lines.append(f"  {item.get('path', '')}: {'; '.join(map(str, item.get('errors', [])))}")
        else:
            lines.append(f"  {item}")
    return "\n".join(lines)


def deploy(app: dict[str, Any], marathon_url: str) -> str:
    """Create the app; returns its id."""
    client = _client(marathon_url)
    try:
        created = client.create_app(app["id"], MarathonApp.from_json(app))
    except ConflictError:
        raise DeployError(
            f"Marathon at {redact_url(marathon_url)} already has {app['id']}: undeploy it first (tfmesos undeploy {app['id'].strip('/')})"
        ) from None
    except MarathonHttpError as exc:
        raise DeployError(f"Marathon at {redact_url(marathon_url)} rejected {app['id']}: {_http_problem(exc)}") from None
    except NoResponseError:
        raise DeployError(f"cannot reach Marathon at {redact_url(marathon_url)}") from None
    if not created:
        raise DeployError(f"Marathon at {redact_url(marathon_url)} did not answer 201 Created for {app['id']}")
    return app["id"]


@dataclass
class Undeploy:
    """How to wait; the defaults suit a real cluster, tests shorten them."""

    force: bool = False
    timeout: float = 300.0
    poll_interval: float = 1.0
    say: Callable[[str], None] = print
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    session: requests.Session = field(default_factory=requests.Session)

    def _until(self, done: Callable[[], bool]) -> bool:
        deadline = self.clock() + self.timeout
        while not done():
            if self.clock() >= deadline:
                return False
            self.sleep(self.poll_interval)
        return True

    def _fail_or_warn(self, message: str) -> None:
        if not self.force:
            raise DeployError(message + " (--force removes the app anyway)")
        self.say(f"warning: {message}")

    def _scheduler_done(self, endpoint: str) -> bool:
        try:
            reply = self.session.get(f"http://{endpoint}{routes.STATUS}", timeout=10, headers=token_header())
        except requests.RequestException:
            return True  # the scheduler has exited
        try:
            return reply.ok and StatusSnapshot.from_json(reply.json()).phase in DONE_PHASES
        except NewerStatusError as exc:  # its phases may mean something else: say so, wait no longer
            self._fail_or_warn(f"the scheduler at {endpoint}: {exc}")
            return True
        except ValueError:
            return False  # not the scheduler's status document (yet)

    def _shut_down(self, endpoint: str) -> None:
        try:
            # With service.api_token_secret the API wants the token, which tfmesos kill sends too.
            reply = self.session.post(f"http://{endpoint}{routes.SHUTDOWN}", timeout=10, headers=token_header())
        except requests.RequestException as exc:
            self._fail_or_warn(f"cannot reach the scheduler at {endpoint} to shut the job down: {exc}")
            return
        if reply.status_code == 401:
            self._fail_or_warn(f"the scheduler at {endpoint} wants the job's API token to shut down: set {TOKEN_ENV} "
                               "to the secret service.api_token_secret names; without that secret the token is the "
                               "scheduler's own: stop the job from inside its container ('tfmesos kill NAME' there, "
                               "see the package README, 'Who can stop a job')")
            return
        if not reply.ok:
            self._fail_or_warn(f"the scheduler at {endpoint} refused to shut down: HTTP {reply.status_code}")
            return
        self.say(f"asked the scheduler at {endpoint} to shut the job down")
        if not self._until(lambda: self._scheduler_done(endpoint)):
            self._fail_or_warn(f"the scheduler at {endpoint} did not finish within {self.timeout:g}s")

    def run(self, name: str, marathon_url: str) -> None:
        client, target = _client(marathon_url), app_id(name)
        try:
            tasks = client.list_tasks(_path_id(target))
            endpoints = [f"{t.host}:{t.ports[0]}" for t in tasks if t.host and t.ports]
            if not endpoints:
                self._fail_or_warn(f"{target} has no running scheduler to shut the job down")
            for endpoint in endpoints:
                self._shut_down(endpoint)
            client.delete_app(_path_id(target), force=True)
            self.say(f"removing {target} from Marathon")
            if not self._until(lambda: self._gone(client, target)):
                raise DeployError(f"Marathon at {redact_url(marathon_url)} still lists {target} after {self.timeout:g}s")
        except NotFoundError:
            raise DeployError(f"Marathon at {redact_url(marathon_url)} has no app {target}") from None
        except NoResponseError:
            raise DeployError(f"cannot reach Marathon at {redact_url(marathon_url)}") from None
        except MarathonHttpError as exc:
            raise DeployError(f"Marathon at {redact_url(marathon_url)}: {_http_problem(exc)}") from None
        self.say(f"{target} is gone")

    @staticmethod
    def _gone(client: MarathonClient, target: str) -> bool:
        try:
            client.get_app(_path_id(target))
        except NotFoundError:
            return True
        except MarathonError:
            return False
        return False


def undeploy(name: str, marathon_url: str, **settings: Any) -> None:
    Undeploy(**settings).run(name, marathon_url)
