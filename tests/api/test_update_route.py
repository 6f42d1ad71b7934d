"""POST /v1/update on the scheduler's API: the job's token first, the body checked (the options as
a JSON object), a dry run answered 200 and an update 202 with the plan, a refusal's every problem
returned (400: options that cannot change; 409: not now), a job that takes no update says so."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from tfmesos.api import routes
from tfmesos.core.status import StatusSnapshot
from tfmesos.scheduler.http_api import ApiServer, Operations, Refused


def _update(options, dry_run):
    if options.get("service", {}).get("name") == "other":
        raise Refused(400, "$.service.name: u cannot change to other", ["$.service.name: u cannot change to other",
                                                                       "$.service.role: * cannot change to team"])
    return {"dry_run": dry_run, "plan": ["$.roles.worker.count: 2 -> 4"]}


@pytest.fixture
def api():
    servers = []

    def start(update=_update):
        server = ApiServer(lambda: StatusSnapshot(name="u", phase="RUNNING"), lambda: None, lambda: None,
                           ops=Operations(token="t", update=update))
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def post(server, body: bytes, token: str | None = "t"):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(f"http://{server.address}{routes.UPDATE}", data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_an_update_needs_the_job_s_token(api):
    code, body = post(api(), b'{"options": {}}', token=None)
    assert code == 401 and "needs its token" in body["error"]
    assert post(api(), b'{"options": {}}', token="wrong")[0] == 401


def test_a_dry_run_is_200_and_an_update_202_with_the_plan(api):
    server = api()
    assert post(server, b'{"options": {}, "dry_run": true}') == (200, {"dry_run": True, "plan": ["$.roles.worker.count: 2 -> 4"]})
    assert post(server, b'{"options": {}}')[0] == 202


@pytest.mark.parametrize("body", [b"not json", b"[]", b'{"options": 3}', b""])
def test_a_body_that_is_not_options_is_400(api, body):
    code, answer = post(api(), body)
    assert code == 400 and "expected the job's options as a JSON object" in answer["error"]


def test_a_refusal_returns_every_problem(api):
    code, body = post(api(), json.dumps({"options": {"service": {"name": "other"}}}).encode())
    assert code == 400 and [p.split(":")[0] for p in body["problems"]] == ["$.service.name", "$.service.role"]


def test_a_job_that_takes_no_update_says_so(api):
    code, body = post(api(update=None), b'{"options": {}}')
    assert code == 409 and "takes no update" in body["error"]
