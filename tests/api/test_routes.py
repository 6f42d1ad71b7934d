"""The API's routes are named once (tfmesos/api/routes.py): the server serves every one of them
and spells none itself, and no client spells one either."""
from __future__ import annotations

import ast
import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tfmesos.api import routes
from tfmesos.core.status import StatusSnapshot
from tfmesos.scheduler.http_api import ApiServer, Operations

ROOT = Path(__file__).resolve().parents[2]
# Both sides of the API: the server, and every client of it (tfmesos status|logs|kill|restart, undeploy).
SIDES = ["tfmesos/scheduler/http_api.py", "tfmesos/scheduler/session.py", "tfmesos/scheduler/marathon_app.py",
         "tfmesos/package/deploy.py",
         *sorted(str(p.relative_to(ROOT)) for d in ("tfmesos/client", "tfmesos/api") for p in (ROOT / d).glob("*.py")
                 if p.name != "routes.py")]
ROUTE_PARTS = ("/v1/", "/metrics", "/web/", "/index.html")


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body
            and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}


def spelled_routes(source: str) -> list[str]:
    """String constants of code (f-strings' parts included) that spell a route: not docstrings,
    not prose (a message that names a route for a person, with spaces)."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
            and not any(c.isspace() for c in node.value) and any(part in node.value for part in ROUTE_PARTS)]


@pytest.mark.parametrize("path", SIDES)
def test_no_side_of_the_api_spells_a_route_itself(path: str) -> None:
    assert (ROOT / path).is_file(), path
    assert spelled_routes((ROOT / path).read_text()) == [], f"{path}: name it in tfmesos/api/routes.py"


def test_a_spelled_route_is_found() -> None:
    source = ('"""GET /v1/status: a docstring"""\n'
              'url = f"http://{api}/v1/status"\nprint("POST /v1/shutdown to stop it")\nx = "/metrics"\n')
    assert sorted(spelled_routes(source)) == ["/metrics", "/v1/status"]


def test_a_task_route_round_trips_its_task() -> None:
    path = routes.task_route(routes.RESTART, "worker:1")
    assert path == "/v1/restart/worker%3A1" and routes.task_of(routes.RESTART, path) == "worker:1"
    assert routes.task_of(routes.LOGS, path) is None
    with pytest.raises(ValueError):
        routes.task_route(routes.STATUS, "worker:1")


@pytest.fixture
def api():
    snapshot = StatusSnapshot(name="routes", phase="RUNNING")
    ops = Operations(logs=lambda task, query: {"task": task}, restart=lambda task: f"restarting {task}",
                     metrics=lambda: (b"# metrics\n", "text/plain"), token="t",
                     update=lambda options, dry_run: {"dry_run": dry_run, "plan": ["no option changes"]})
    server = ApiServer(lambda: snapshot, lambda: {"version": 1, "cluster": {"worker": ["h:1"]}}, lambda: None, ops=ops)
    server.start()
    yield server
    server.stop()


def _call(api: ApiServer, method: str, path: str) -> tuple[int, bytes]:
    body = b'{"options": {}, "dry_run": true}' if path == routes.UPDATE else b""
    request = urllib.request.Request(f"http://{api.address}{path}", data=body if method == "POST" else None,
                                     method=method, headers={"Authorization": "Bearer t"})
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_the_server_serves_every_route_named(api: ApiServer) -> None:
    for method, named in [("GET", r) for r in routes.GET_ROUTES] + [("POST", r) for r in routes.POST_ROUTES]:
        path = (routes.task_route(named, "worker:0") if named in routes.TASK_ROUTES
                else named + "index.html" if named == routes.PAGE_FILES else named)
        code, body = _call(api, method, path)
        assert code < 300, (method, path, code, body[:200])
    code, body = _call(api, "GET", "/v1/unnamed")
    assert code == 404 and "no such endpoint" in json.loads(body)["error"]
