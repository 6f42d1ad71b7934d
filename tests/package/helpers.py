"""Shared by the package tests: where things are, and a Marathon app's schema check."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema

from tfmesos.package.files import load_package
from tfmesos.package.render import render_app

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIR = ROOT / "universe-package"
# The universe's meta schemas and Marathon's AppDefinition.json (see SOURCES.md there).
REFERENCE = ROOT / "tests" / "data" / "dcos"


def reference(name: str) -> dict[str, Any]:
    return json.loads((REFERENCE / name).read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _app_validator() -> jsonschema.Draft4Validator:
    return jsonschema.Draft4Validator(reference("AppDefinition.json"))


def app_definition_problems(app: dict[str, Any]) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in _app_validator().iter_errors(app)]


def example_options_files() -> list[Path]:
    return sorted(ROOT.glob("examples/*/options.json"))


PACKAGE = load_package(PACKAGE_DIR)


def render(options: Any) -> dict[str, Any]:
    """The app that DC/OS would install for these options, from the committed package."""
    return render_app(options, PACKAGE)
