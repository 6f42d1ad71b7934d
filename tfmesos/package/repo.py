"""A one-package universe repository: the package folder laid out as in mesosphere/universe
(``repo/packages/T/tfmesos/0/``) and the repository index DC/OS reads (version v4), built the
way the universe's scripts/gen_universe.py builds it.

Serve the index with its content type (``repo.content_type``) and add it with
``dcos package repo add tfmesos <URL of repo.json>``.
"""
from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from .files import PACKAGE_FILES, PackageFiles, load_package

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


def build_repo(out_dir: Path | str, files: PackageFiles | None = None, release_version: int = 0) -> Path:
    """Write the repository under ``out_dir``; returns the index's path."""
    files = files or load_package()
    out = Path(out_dir)
    folder = out / package_path(files.package["name"], release_version)
    folder.mkdir(parents=True, exist_ok=True)
    for name in PACKAGE_FILES:
        (folder / name).write_text(files.texts[name], encoding="utf-8")
    index = out / INDEX_NAME
    index.write_text(json.dumps(repo_index(files, release_version), indent=2) + "\n", encoding="ascii")
    (out / "repo.content_type").write_text(CONTENT_TYPE, encoding="ascii")
    return index
