"""The agent's files API: ``GET /files/browse``, ``/files/read`` and ``/files/debug``.

As a Mesos agent does (src/files/files.cpp, checked against tests/data/mesos-traces/10-files):
only attached paths are served, which are each executor run's sandbox, under its real path and
under the virtual ``/frameworks/F/executors/E/runs/latest``; sandboxes of finished executors stay
readable while they exist. ``read`` answers ``{"data", "offset"}``; without an offset, or with
offset -1, it answers the file's size as the offset and no data (how a client learns where to
start tailing); at most 16 pages are read at once. A missing path is 404 with an empty body.
"""
from __future__ import annotations

import grp
import os
import pwd
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from ..http.server import Request, Response

if TYPE_CHECKING:
    from .agent import Agent

MAX_READ = 16 * os.sysconf("SC_PAGESIZE")


def _virtual(framework_id: str, executor_id: str) -> str:
    return f"/frameworks/{framework_id}/executors/{executor_id}/runs/latest"


def attached(agent: "Agent") -> dict[str, Path]:
    """Every path the files API serves, virtual or real, with the real directory it names."""
    roots: dict[str, Path] = {}
    for framework, executors, finished in agent.state_executors():
        for executor in (*finished, *executors):  # the running one wins 'latest'
            directory = Path(executor.directory)
            roots[_virtual(framework.id, executor.executor_id)] = directory
            roots[str(directory)] = directory
            roots[str(directory.parent / "latest")] = directory
    return roots


def resolve(roots: dict[str, Path], path: str) -> Path | None:
    """The real file for ``path``, or None when it lies under no attached directory."""
    path = "/" + path.strip("/") if path != "/" else path
    probe = path
    while probe and probe != "/":
        if probe in roots:
            rest = path[len(probe):].lstrip("/")
            real = (roots[probe] / rest) if rest else roots[probe]
            # No escaping the sandbox with '..' or a symlink the task made.
            base = roots[probe].resolve()
            target = real.resolve()
            if target != base and base not in target.parents:
                return None
            return target
        probe = probe.rsplit("/", 1)[0]
    return None


def _owner(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _group(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def file_entry(path: str, st: os.stat_result) -> dict[str, object]:
    """One entry of /files/browse, as Mesos' jsonFileInfo writes it."""
    return {
        "gid": _group(st.st_gid),
        "mode": stat.filemode(st.st_mode),
        "mtime": float(int(st.st_mtime)),
        "nlink": st.st_nlink,
        "path": path,
        "size": st.st_size,
        "uid": _owner(st.st_uid),
    }


class FilesApi:
    def __init__(self, agent: "Agent") -> None:
        self._agent = agent

    def handle(self, path: str, request: Request) -> Response:
        if request.method != "GET":
            return Response.text(405, "Expecting 'GET', received '" + request.method + "'")
        if path == "/files/debug":
            return Response.json(200, {k: str(v) for k, v in attached(self._agent).items()})
        query = {k: v[-1] for k, v in request.query.items()}
        if "path" not in query:
            return Response.text(400, "Expecting 'path=value' in query.\n")
        if path == "/files/browse":
            return self._browse(query["path"])
        if path == "/files/read":
            return self._read(query)
        return Response.text(404, "404 Not Found.")

    def _browse(self, path: str) -> Response:
        real = resolve(attached(self._agent), path)
        if real is None or not real.is_dir():
            return Response.text(404, "")
        shown = path.rstrip("/") or "/"
        entries = []
        for child in sorted(real.iterdir()):
            try:
                entries.append(file_entry(f"{shown}/{child.name}", child.stat()))
            except OSError:
                continue  # removed meanwhile
        return Response.json(200, entries)

    def _read(self, query: dict[str, str]) -> Response:
        try:
            offset = int(query.get("offset", "-1"))
        except ValueError:
            return Response.text(400, f"Failed to parse offset: {query['offset']!r} is not a number.\n")
        length = None
        if "length" in query:
            try:
                length = int(query["length"])
            except ValueError:
                return Response.text(400, f"Failed to parse length: {query['length']!r} is not a number.\n")
            if length < -1:
                return Response.text(400, f"Negative length provided: {length}.\n")
        if offset < -1:
            return Response.text(400, f"Negative offset provided: {offset}.\n")
        real = resolve(attached(self._agent), query["path"])
        if real is None or not real.exists():
            return Response.text(404, "")
        if real.is_dir():
            return Response.text(400, "Cannot read a directory.\n")
        try:
            with open(real, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if offset == -1:
                    return Response.json(200, {"data": "", "offset": size})
                if offset >= size:
                    return Response.json(200, {"data": "", "offset": offset})
                want = MAX_READ if length is None or length == -1 else min(length, MAX_READ)
                f.seek(offset)
                raw = f.read(want)
        except OSError:
            return Response.text(404, "")
        # Bytes that are not UTF-8 travel as lone surrogates, so a client gets the exact bytes back.
        return Response.json(200, {"data": raw.decode("utf-8", "surrogateescape"), "offset": offset})
