"""The Mesos fetcher: put ``CommandInfo.uris`` into the sandbox before launch.

Local paths and ``file://`` URIs are copied, ``http(s)://`` downloaded with
urllib; archives are extracted when ``extract`` (default true) and
``executable`` files get the exec bit, as ``mesos-fetcher`` does.  This runs
in a worker thread: it blocks on disk and network.  The archive and HTTP modules are imported
by the fetch that needs them: most tasks fetch nothing.
"""
from __future__ import annotations

import os
import shutil
import stat
import urllib.parse
from pathlib import Path
from typing import Any

_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
_HTTP_TIMEOUT = 60.0


class FetchError(Exception):
    pass


def fetch_all(uris: list[dict[str, Any]], sandbox: Path) -> list[str]:
    """Fetch every URI; returns log lines for the sandbox's stderr."""
    lines = []
    for uri in uris:
        lines.append(fetch_one(uri, sandbox))
    return lines


def fetch_one(uri: dict[str, Any], sandbox: Path) -> str:
    value = uri["value"]
    parsed = urllib.parse.urlsplit(value)
    name = uri.get("output_file") or os.path.basename(parsed.path.rstrip("/")) or "download"
    target = sandbox / name
    target.parent.mkdir(parents=True, exist_ok=True)
    if parsed.scheme in ("", "file"):
        source = Path(urllib.parse.unquote(parsed.path) if parsed.scheme == "file" else value)
        if not source.is_absolute():
            raise FetchError(f"Relative path '{value}' needs a frameworks home, which is not set")
        if not source.exists():
            raise FetchError(f"Failed to fetch '{value}': No such file or directory")
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            shutil.copyfile(source, target)
    elif parsed.scheme in ("http", "https"):
        from urllib.error import URLError
        from urllib.request import urlopen

        try:
            with urlopen(value, timeout=_HTTP_TIMEOUT) as response, open(target, "wb") as out:
                shutil.copyfileobj(response, out)
        except (URLError, OSError, ValueError) as error:
            raise FetchError(f"Failed to fetch '{value}': {error}") from None
    else:
        raise FetchError(f"Failed to fetch '{value}': unsupported scheme '{parsed.scheme}'")

    if uri.get("executable"):
        target.chmod(target.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        return f"Fetched '{value}' to '{target}' (executable)"
    if uri.get("extract", True) and target.is_file() and _extract(target, sandbox):
        return f"Extracted '{target}' into '{sandbox}'"
    return f"Fetched '{value}' to '{target}'"


def _data_members(tar: Any, destination: Path) -> list[Any]:
    """What ``filter="data"`` lets through, for a ``tarfile`` without it: members that stay inside
    ``destination`` (links too), no devices or FIFOs, no set-uid/set-gid bits."""
    import tarfile

    root = destination.resolve()

    def inside(path: Path) -> bool:
        return path == root or root in path.parents

    kept = []
    for member in tar.getmembers():
        target = (root / member.name).resolve()
        linked = (target.parent / member.linkname if member.issym() else root / member.linkname).resolve()
        if (not inside(target) or member.name.startswith("/") or member.isdev()
                or ((member.issym() or member.islnk()) and not inside(linked))):
            raise tarfile.TarError(f"member {member.name!r} is refused (outside the sandbox, or a device)")
        member.mode &= 0o755
        kept.append(member)
    return kept


def _extract(archive: Path, destination: Path) -> bool:
    import gzip
    import tarfile
    import zipfile

    name = archive.name.lower()
    try:
        if name.endswith(_TAR_SUFFIXES):
            with tarfile.open(archive) as tar:
                if hasattr(tarfile, "data_filter"):
                    tar.extractall(destination, filter="data")
                else:  # Python < 3.11.4 (Debian 12's 3.11.2) has no filter argument
                    tar.extractall(destination, members=_data_members(tar, destination))
            return True
        if name.endswith(".zip"):
            with zipfile.ZipFile(archive) as zipped:
                zipped.extractall(destination)
            return True
        if name.endswith(".gz"):
            with gzip.open(archive, "rb") as src, open(destination / archive.name[:-3], "wb") as dst:
                shutil.copyfileobj(src, dst)
            return True
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError) as error:
        raise FetchError(f"Failed to extract archive '{archive}': {error}") from None
    return False
