"""Where the DC/OS package's files live, and reading them into one value."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
# A checkout has the package at the top level; an installed tfmesos carries it as package data.
_CANDIDATES = (_HERE.parents[1] / "universe-package", _HERE / "universe")

PACKAGE_FILES = ("package.json", "config.json", "marathon.json.mustache", "resource.json")


@dataclass(frozen=True)
class PackageFiles:
    """The four files of a universe package (packaging version 4.0), as read from disk."""

    package: dict[str, Any]
    config: dict[str, Any]
    template: str
    resource: dict[str, Any]
    texts: dict[str, str]  # file name -> exact text, for byte-level checks and the repo index
    directory: Path | None = None  # where they were read: resource.json's icons are paths under it


def package_dir() -> Path:
    for candidate in _CANDIDATES:
        if (candidate / "package.json").is_file():
            return candidate
    raise FileNotFoundError("the DC/OS package (universe-package/) is not next to the tfmesos package")


def load_package(directory: Path | None = None) -> PackageFiles:
    directory = directory or package_dir()
    texts = {name: (directory / name).read_text(encoding="utf-8") for name in PACKAGE_FILES}
    return PackageFiles(
        package=json.loads(texts["package.json"]),
        config=json.loads(texts["config.json"]),
        template=texts["marathon.json.mustache"],
        resource=json.loads(texts["resource.json"]),
        texts=texts,
        directory=directory,
    )
