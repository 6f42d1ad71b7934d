"""The scheduler API's routes, named once: the server (``tfmesos/scheduler/http_api.py``) serves
these, and its clients (``tfmesos status|logs|kill|restart|update``, the package's undeploy) ask for them.
Plain names, importable by both sides without the server's code. The page's own script
(``scheduler/web/``) polls ``STATUS`` and ``LOGS`` too, spelled there in JavaScript."""
from __future__ import annotations

from urllib.parse import quote, unquote

HEALTH = "/v1/health"  # GET: 200 while the scheduler's loop turns, 503 once wedged (Marathon's check)
STATUS = "/v1/status"  # GET: the job's StatusSnapshot
CLUSTERSPEC = "/v1/clusterspec"  # GET: {"version", "cluster"} once every task has an endpoint
ENDPOINTS = "/v1/endpoints"  # GET: the TensorFlow tasks' host:port by role
LOGS = "/v1/logs/"  # GET LOGS + ROLE:INDEX: a chunk of a task's stdout/stderr
METRICS = "/metrics"  # GET: Prometheus text format
SHUTDOWN = "/v1/shutdown"  # POST: kill every task, tear the framework down
RESTART = "/v1/restart/"  # POST RESTART + ROLE:INDEX: kill one task; it is relaunched
UPDATE = "/v1/update"  # POST {"options": {...}, "dry_run": bool}: run the job with new options (tfmesos update)
PAGE = "/"  # GET: the status page
PAGE_INDEX = "/index.html"  # GET: the same page
PAGE_FILES = "/web/"  # GET PAGE_FILES + NAME: a file of the page

TASK_ROUTES = (LOGS, RESTART)  # a task's name follows them
GET_ROUTES = (HEALTH, STATUS, CLUSTERSPEC, ENDPOINTS, LOGS, METRICS, PAGE, PAGE_INDEX, PAGE_FILES)
POST_ROUTES = (SHUTDOWN, RESTART, UPDATE)


def task_route(route: str, task: str) -> str:
    """``task_route(RESTART, "worker:1")``: the route for one task, its name quoted as a path part."""
    if route not in TASK_ROUTES:
        raise ValueError(f"{route!r} takes no task: expected one of {', '.join(TASK_ROUTES)}")
    return route + quote(task)


def task_of(route: str, path: str) -> str | None:
    """The task ``path`` names under ``route`` (``task_route``'s inverse); None: not that route."""
    return unquote(path[len(route):]) if path.startswith(route) else None


def is_page_file(path: str) -> bool:
    """The status page and its files: served without the API's token (the page asks for it)."""
    return path in (PAGE, PAGE_INDEX) or path.startswith(PAGE_FILES)
