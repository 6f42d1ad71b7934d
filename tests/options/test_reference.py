"""The options reference in docs/options.md is generated right for every role, not from one role's schema."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.unit


def _reference_rows() -> dict[str, tuple[str, str]]:
    spec = importlib.util.spec_from_file_location("options_reference", ROOT / "tools" / "options_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = module.reference(json.loads((ROOT / "config-schema.json").read_text()))
    rows = {}
    for line in text.splitlines():
        if line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            rows[cells[0].strip("`")] = (cells[2].strip("`"), cells[3].replace("\\|", "|"))
    return rows


def test_every_role_field_shows_that_roles_own_default_and_description():
    roles = json.loads((ROOT / "config-schema.json").read_text())["properties"]["roles"]["properties"]
    rows = _reference_rows()
    for role, node in roles.items():
        for field, leaf in node["properties"].items():
            row = rows.get(f"roles.{role}.{field}") or rows.get(f"roles.<role>.{field}")
            assert row, f"roles.{role}.{field} is missing from the reference"
            assert row == (json.dumps(leaf.get("default")), leaf["description"]), (role, field, row)


def test_the_role_count_descriptions_read_as_english():
    roles = json.loads((ROOT / "config-schema.json").read_text())["properties"]["roles"]["properties"]
    for role, node in roles.items():
        text = node["properties"]["count"]["description"]
        assert "servers tasks" not in text and "Workers tasks" not in text, text
