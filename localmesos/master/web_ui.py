"""What a browser finds on the embedded master's port, where a Mesos master serves its web UI.

``GET /`` is one plain page: links to ``/state``, the agents and their resources, and each
framework's tasks with a link to the task's sandbox. ``GET /sandbox/AGENT/FRAMEWORK/EXECUTOR/[PATH]``
lists a sandbox (its latest run) or sends one of its files as text. A link into the Mesos UI,
``/#/agents/A/frameworks/F/executors/E`` (what schedulers put on their pages), reaches ``/`` with
the rest in the fragment, which only the browser sees: the page's one line of script follows it to
``/sandbox/...``. The agents all run on this machine, so the sandboxes are read from the work
directory (same layout as ``sandbox.sandbox_path``).
"""
from __future__ import annotations

import html
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from ..http.server import Response

MAX_SHOWN = 1 << 20  # bytes of a file sent: its end, where a failure shows
_FOLLOW_FRAGMENT = (
    "<script>function follow() {"
    " const m = location.hash.match(/^#\\/agents\\/([^/]+)\\/frameworks\\/([^/]+)\\/executors\\/([^/]+)/);"
    " if (m) location.replace(`/sandbox/${m[1]}/${m[2]}/${m[3]}/`); }"
    " follow(); addEventListener('hashchange', follow);</script>")


def _page(title: str, body: str) -> Response:
    text = (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title></head>"
            f"<body><h1>{html.escape(title)}</h1>{body}</body></html>")
    return Response(200, text.encode("utf-8"), [("Content-Type", "text/html; charset=utf-8")])


def _amounts(resources: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v:g}" if isinstance(v, (int, float)) else f"{k} {v}" for k, v in sorted(resources.items()))


def index_page(state: dict[str, Any]) -> Response:
    e = html.escape
    rows = "".join(f"<tr><td>{e(a['id'])}</td><td>{e(a['pid'])}</td><td>{e(_amounts(a['resources']))}</td></tr>"
                   for a in state.get("slaves", []))
    frameworks = ""
    for f in state.get("frameworks", []) + state.get("completed_frameworks", []):
        tasks = "".join(
            f"<li>{e(t['id'])} {e(t['state'])} on {e(t['slave_id'])}: <a href=\"/sandbox/{quote(t['slave_id'])}/"
            f"{quote(f['id'])}/{quote(t.get('executor_id') or t['id'])}/\">sandbox</a></li>"
            for t in f.get("tasks", []) + f.get("completed_tasks", []))
        frameworks += f"<h3>{e(f['name'])} ({e(f['id'])})</h3><ul>{tasks}</ul>"
    body = (f"{_FOLLOW_FRAGMENT}<p>tfmesos' embedded Mesos master {e(state.get('version', ''))}, "
            "not the Mesos web UI. <a href=\"/state\">/state</a> · <a href=\"/metrics/snapshot\">/metrics/snapshot</a>"
            f"</p><h2>Agents</h2><table><tr><th>id</th><th>pid</th><th>resources</th></tr>{rows}</table>"
            f"<h2>Frameworks</h2>{frameworks or '<p>none</p>'}")
    return _page("tfmesos local-master", body)


def sandbox_response(work_dir: Path, rest: str) -> Response:
    """``rest``: ``AGENT/FRAMEWORK/EXECUTOR/[PATH]`` as in the URL (quoted)."""
    parts = [unquote(p) for p in rest.split("/")]
    ids, sub = parts[:3], [p for p in parts[3:] if p]
    if len(ids) < 3 or any(not i or i in (".", "..") or "/" in i for i in ids):
        return Response.text(404, "expected /sandbox/AGENT/FRAMEWORK/EXECUTOR/\n")
    agent, framework, executor = ids
    base = (work_dir / "agents" / agent / "frameworks" / framework / "executors" / executor / "runs" / "latest")
    try:
        root = base.resolve(strict=True)
        target = root.joinpath(*sub).resolve(strict=True)
    except (OSError, RuntimeError):
        return Response.text(404, f"no sandbox of executor {executor} of framework {framework} on agent {agent}\n")
    if target != root and root not in target.parents:
        return Response.text(404, "outside the sandbox\n")
    if target.is_file():
        with open(target, "rb") as f:
            size = f.seek(0, 2)
            f.seek(max(0, size - MAX_SHOWN))
            data = f.read()
        return Response(200, data, [("Content-Type", "text/plain; charset=utf-8")])
    here = "/".join(quote(p) for p in (agent, framework, executor, *sub))
    items = "".join(
        f"<li><a href=\"/sandbox/{here}/{quote(child.name)}{'/' if child.is_dir() else ''}\">"
        f"{html.escape(child.name)}</a> {'' if child.is_dir() else f'({child.stat().st_size} bytes)'}</li>"
        for child in sorted(target.iterdir()))
    return _page(f"sandbox of {executor}" + (f": {'/'.join(sub)}" if sub else ""),
                 f"<p>agent {html.escape(agent)}, framework {html.escape(framework)} · "
                 f"<a href=\"/\">master</a></p><ul>{items}</ul>")
