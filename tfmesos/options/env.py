"""The options document as environment variables: one ``TFMESOS_OPT_*`` variable per leaf option.

This is how the DC/OS package and ``tfmesos deploy`` hand the options to the scheduler: a
Marathon app can only carry strings, and Mustache cannot serialize a whole object, so every
leaf of ``config-schema.json`` travels as its own variable, typed back by the schema:

* integer / number: the number's text (Cosmos writes doubles the Java way, e.g. ``1.0E10``);
* boolean: ``true`` / ``false`` (any case);
* string: the text itself;
* array of strings: one element per line (``a\\nb\\n``); the empty string is the empty array.

A variable that is absent is an option that is absent, so the schema default applies later
(``tfmesos.options.load.resolve_options``).
"""
from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from typing import Any, Iterator, Mapping

from .load import OptionsError, json_path, load_schema

PREFIX = "TFMESOS_OPT_"

OptionPath = tuple[str, ...]
# JSON's number grammar; also what Java's Double.toString writes (1.0E10, 2.5E-4).
_NUMBER = re.compile(r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$")


def env_name(path: OptionPath) -> str:
    """``("roles", "worker", "count")`` -> ``TFMESOS_OPT_ROLES_WORKER_COUNT``."""
    return PREFIX + "_".join(re.sub(r"[^A-Za-z0-9]", "_", part).upper() for part in path)


def leaf_paths(schema: Mapping[str, Any] | None = None) -> list[tuple[OptionPath, dict[str, Any]]]:
    """Every leaf option (anything that is not an object with properties), in schema order."""
    return list(_walk(schema if schema is not None else load_schema(), ()))


def _walk(schema: Mapping[str, Any], path: OptionPath) -> Iterator[tuple[OptionPath, dict[str, Any]]]:
    if schema.get("type") == "object" and "properties" in schema:
        for name, sub in schema["properties"].items():
            yield from _walk(sub, path + (name,))
    else:
        yield path, dict(schema)


def _parse_scalar(text: str, kind: str | None) -> Any:
    """One value of a JSON Schema ``type`` from its text; ValueError says what was expected."""
    if kind == "boolean":
        lowered = text.strip().lower()
        if lowered not in ("true", "false"):
            raise ValueError("expected true or false")
        return lowered == "true"
    if kind in ("integer", "number"):
        stripped = text.strip()
        if not _NUMBER.match(stripped):
            raise ValueError(f"expected {'an integer' if kind == 'integer' else 'a number'}")
        value = Decimal(stripped)
        if kind == "integer" or re.fullmatch(r"-?[0-9]+", stripped):
            if value != value.to_integral_value():
                raise ValueError("expected an integer")
            return int(value)
        number = float(value)
        if not math.isfinite(number):  # 1e400: the file route refuses it too
            raise ValueError("expected a finite number")
        return number
    return text


def _parse(text: str, leaf: Mapping[str, Any]) -> Any:
    if leaf.get("type") == "array":
        if text == "":
            return []
        # Each element is written followed by a newline; accept the last one without it.
        lines = (text[:-1] if text.endswith("\n") else text).split("\n")
        return [_parse_scalar(line, leaf.get("items", {}).get("type")) for line in lines]
    return _parse_scalar(text, leaf.get("type"))


def _set(doc: dict[str, Any], path: OptionPath, value: Any) -> None:
    for part in path[:-1]:
        doc = doc.setdefault(part, {})
    doc[path[-1]] = value


def options_from_env(environ: Mapping[str, str], schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The user options document that the ``TFMESOS_OPT_*`` variables of ``environ`` describe."""
    leaves = leaf_paths(schema)
    known = {env_name(path) for path, _ in leaves}
    problems = [
        f"{name}: unknown option variable; expected one of the {PREFIX}* names derived from config-schema.json"
        for name in sorted(environ)
        if name.startswith(PREFIX) and name not in known
    ]
    options: dict[str, Any] = {}
    for path, leaf in leaves:
        name = env_name(path)
        if name not in environ:
            continue
        try:
            _set(options, path, _parse(environ[name], leaf))
        except (ValueError, InvalidOperation) as exc:
            problems.append(f"{name} ({json_path(path)}): {environ[name][:60]!r} is invalid: {exc}")
    if problems:
        raise OptionsError(problems)
    return options


def _format_scalar(value: Any, kind: str | None, where: str) -> str:
    if kind == "boolean" and isinstance(value, bool):
        return "true" if value else "false"
    if kind == "integer" and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if kind == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(value)
    if kind == "string" and isinstance(value, str):
        return value
    raise OptionsError([f"{where}: {value!r} is invalid: expected {kind}"])


def _format(value: Any, leaf: Mapping[str, Any], path: OptionPath) -> str:
    where = json_path(path)
    if leaf.get("type") != "array":
        return _format_scalar(value, leaf.get("type"), where)
    if not isinstance(value, list):
        raise OptionsError([f"{where}: {value!r} is invalid: expected array"])
    kind = leaf.get("items", {}).get("type")
    out = []
    for i, item in enumerate(value):
        text = _format_scalar(item, kind, f"{where}[{i}]")
        if "\n" in text:
            raise OptionsError([f"{where}[{i}]: {text[:60]!r} cannot travel in {env_name(path)}: expected no newline"])
        out.append(text + "\n")
    return "".join(out)


def options_to_env(options: Mapping[str, Any], schema: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The inverse of :func:`options_from_env`: a variable for every leaf present in ``options``."""
    schema = schema if schema is not None else load_schema()
    env: dict[str, str] = {}
    _unknown_fields(options, schema, ())
    for path, leaf in leaf_paths(schema):
        node: Any = options
        for part in path:
            if not isinstance(node, Mapping) or part not in node:
                break
            node = node[part]
        else:
            env[env_name(path)] = _format(node, leaf, path)
    return env


def _unknown_fields(doc: Any, schema: Mapping[str, Any], path: OptionPath) -> None:
    """A field the schema does not know would silently vanish on the way: refuse it."""
    if not isinstance(doc, Mapping) or "properties" not in schema:
        return
    for key, value in doc.items():
        if key not in schema["properties"]:
            allowed = ", ".join(schema["properties"])
            raise OptionsError([f"{json_path(path + (key,))}: unknown field; expected one of: {allowed}"])
        _unknown_fields(value, schema["properties"][key], path + (key,))
