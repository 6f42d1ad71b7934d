"""A one-package universe repository: the package folder laid out as in mesosphere/universe
(``repo/packages/T/tfmesos/0/``) and the repository index DC/OS reads (version v4), built the
way the universe's scripts/gen_universe.py builds it.

The committed resource.json names its icons by paths in the package folder; the repository gets
them beside its index and names them by the URL it will be served from (``base_url``), so that no
URL points at something that does not exist. Serve the whole folder there, the index with its
content type (``repo.content_type``), and add it with ``dcos package repo add tfmesos <base_url>/repo.json``.
"""
from __future__ import annotations

import base64
import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

from .files import PACKAGE_FILES, PackageFiles, load_package, package_dir

CONTENT_TYPE = "application/vnd.dcos.universe.repo+json;charset=utf-8;version=v4"
INDEX_NAME = "repo.json"


def package_entry(files: PackageFiles, release_version: int = 0) -> dict[str, Any]:
    """The package as the index lists it: package.json plus its other files inlined."""
    return {
        **files.package,
        "releaseVersion": release_version,
        "marathon": {"v2AppMustacheTemplate": base64.b64encode(files.template.encode("utf-8")).decode("ascii")},
        "resource": files.resource,
        "config": files.config,
    }


def repo_index(files: PackageFiles, release_version: int = 0) -> dict[str, Any]:
    return {"packages": [package_entry(files, release_version)]}


def package_path(name: str, release_version: int = 0) -> Path:
    return Path("repo", "packages", name[:1].upper(), name, str(release_version))


class RepoError(ValueError):
    """A base URL or image that cannot go into the repository (names the option)."""


def served_resource(resource: dict[str, Any], base_url: str, image: str = "") -> dict[str, Any]:
    """resource.json as the repository serves it: each icon path as ``base_url/path``, and the
    scheduler's image replaced by ``image`` when one is given (the copy pushed to your registry)."""
    if not base_url.startswith(("http://", "https://")):
        raise RepoError(f"--base-url: {base_url!r}: expected the http(s):// URL the repository will be served from")
    out = json.loads(json.dumps(resource))
    out["images"] = {name: f"{base_url.rstrip('/')}/{path}" for name, path in resource.get("images", {}).items()}
    if image:
        out["assets"]["container"]["docker"]["tfmesos"] = image
    return out


def build_repo(out_dir: Path | str, base_url: str, files: PackageFiles | None = None, release_version: int = 0,
               image: str = "") -> Path:
    """Write the repository (index, package folder, icons) under ``out_dir``; returns the index's path."""
    files = files or load_package()
    icons = list(files.resource.get("images", {}).values())  # paths in the package folder
    resource = served_resource(files.resource, base_url, image)
    files = dataclasses.replace(files, resource=resource,
                                texts={**files.texts, "resource.json": json.dumps(resource, indent=2) + "\n"})
    out = Path(out_dir)
    folder = out / package_path(files.package["name"], release_version)
    folder.mkdir(parents=True, exist_ok=True)
    for name in PACKAGE_FILES:
        (folder / name).write_text(files.texts[name], encoding="utf-8")
    for path in icons:
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(files.directory or package_dir()) / path, out / path)
    index = out / INDEX_NAME
    index.write_text(json.dumps(repo_index(files, release_version), indent=2) + "\n", encoding="ascii")
    (out / "repo.content_type").write_text(CONTENT_TYPE, encoding="ascii")
    return index
