"""The checks the universe repository runs on a package (scripts/validate_packages.py and
scripts/json_dup_key_check.py there), plus one of ours: every tag of the template names an
option or a resource that exists.

Each function returns a list of problems; an empty list means the package passes.
The JSON schemas are the universe's own (``repo/meta/schema``), found in ``reference``.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Mapping

import jsonschema
from chevron.tokenizer import ChevronError, tokenize

from .files import PACKAGE_FILES

# What the universe rejects: an escaped unicode literal anywhere in the (re-serialized) JSON.
_ESCAPED_UNICODE = re.compile(r"\\u[0-9a-fA-F]{4}")

_SCHEMAS = {
    "package.json": "package-schema.json",
    "config.json": "config-schema.json",
    "resource.json": "v3-resource-schema.json",
}


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def check_text(name: str, text: str) -> list[str]:
    """ASCII only (Cosmos up to 0.6.2 reads files in the platform charset) and no \\uXXXX."""
    problems = []
    bad = sorted({f"U+{ord(c):04X}" for c in text if ord(c) > 127})
    if bad:
        problems.append(f"{name}: non-ASCII characters {', '.join(bad)}; expected ASCII only")
    if _ESCAPED_UNICODE.search(text):
        problems.append(f"{name}: contains a \\uXXXX escape; expected plain ASCII text")
    return problems


def parse_json(name: str, text: str) -> tuple[Any, list[str]]:
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicates)
    except _DuplicateKey as exc:
        return None, [f"{name}: duplicate key {exc.args[0]!r}; expected each key once per object"]
    except json.JSONDecodeError as exc:
        return None, [f"{name}: not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"]
    if _ESCAPED_UNICODE.search(json.dumps(data)):
        return data, [f"{name}: a string holds a unicode escape or non-ASCII text; expected ASCII"]
    return data, []


def check_schema(name: str, data: Any, schema: Mapping[str, Any]) -> list[str]:
    validator = jsonschema.Draft4Validator(schema)
    return [
        f"{name}: {'/'.join(map(str, error.absolute_path)) or '(top)'}: {error.message}"
        for error in sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    ]


def _resolves(parts: list[str], config: Mapping[str, Any], resource: Mapping[str, Any]) -> bool:
    if parts[0] == "resource":
        node: Any = resource
        for part in parts[1:]:
            if not isinstance(node, Mapping) or part not in node:
                return False
            node = node[part]
        return True
    schema: Any = config
    for part in parts:
        schema = schema.get("properties", {}).get(part) if isinstance(schema, Mapping) else None
        if schema is None:
            return False
    return True


def check_template(template: str, config: Mapping[str, Any], resource: Mapping[str, Any]) -> list[str]:
    """Parses as Mustache; no partials; every tag names a known option or resource."""
    name = "marathon.json.mustache"
    try:
        tokens = list(tokenize(template))
    except ChevronError as exc:
        return [f"{name}: not valid Mustache: {exc}"]
    problems = []
    for tag, key in tokens:
        if tag == "partial":
            problems.append(f"{name}: partial {{{{>{key}}}}}: Cosmos renders no partials")
        elif tag in ("variable", "no escape", "section", "inverted section") and key != ".":
            if not _resolves(key.split("."), config, resource):
                problems.append(f"{name}: {{{{{key}}}}} names no option of config.json and no resource")
    return problems


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def check_images(directory: Path, resource: Mapping[str, Any]) -> list[str]:
    """Each icon is an http(s) URL (a built repository's) or a PNG file in the package folder."""
    problems = []
    for name, where in resource.get("images", {}).items():
        if isinstance(where, str) and where.startswith(("http://", "https://")):
            continue
        path = directory / str(where)
        if not path.is_file() or path.read_bytes()[:8] != PNG_SIGNATURE:
            problems.append(f"resource.json: images/{name}: {where!r} is no PNG file in {directory.name}/; "
                            "expected a path to one (tfmesos package build turns it into a URL)")
    return problems


def check_package(directory: Path, reference: Path) -> list[str]:
    """Every check on a package folder; ``reference`` holds the universe's meta schemas."""
    missing = [name for name in PACKAGE_FILES if not (directory / name).is_file()]
    if missing:
        return [f"{directory}: missing {', '.join(missing)}"]
    problems: list[str] = []
    parsed: dict[str, Any] = {}
    for name in PACKAGE_FILES:
        raw = (directory / name).read_bytes()
        text = raw.decode("utf-8", errors="replace")
        problems += check_text(name, text)
        if name in _SCHEMAS:
            data, found = parse_json(name, text)
            problems += found
            if data is not None:
                parsed[name] = data
                schema = json.loads((reference / _SCHEMAS[name]).read_text(encoding="utf-8"))
                problems += check_schema(name, data, schema)
    if "resource.json" in parsed:
        problems += check_images(directory, parsed["resource.json"])
    if "config.json" in parsed and "resource.json" in parsed:
        template = (directory / "marathon.json.mustache").read_text(encoding="utf-8", errors="replace")
        problems += check_template(template, parsed["config.json"], parsed["resource.json"])
    return problems
