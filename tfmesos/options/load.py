"""Load an options JSON the way DC/OS Cosmos does: schema defaults, deep merge, validate.

The schema (``config-schema.json`` at the repository root) is the single source of truth for
the options of ``tfmesos run`` and of the DC/OS package. Every violation is reported with its
JSON path, the offending value and what was expected, and nothing starts before that.
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from .problems import OptionsError, json_path

_HERE = Path(__file__).resolve().parent
# In a checkout the schema lives at the top level; an installed package carries a copy.
_SCHEMA_CANDIDATES = (_HERE.parent / "config-schema.json", _HERE / "config-schema.json")


@lru_cache(maxsize=1)
def load_schema() -> dict[str, Any]:
    for candidate in _SCHEMA_CANDIDATES:
        if candidate.is_file():
            return json.loads(candidate.read_text(encoding="ascii"))
    raise FileNotFoundError("config-schema.json not found next to the tfmesos package")


def schema_defaults(schema: dict[str, Any]) -> Any:
    """The document made of the schema's defaults (objects recurse into their properties)."""
    if schema.get("type") == "object" and "properties" in schema:
        out = copy.deepcopy(schema.get("default", {}))
        for name, sub in schema["properties"].items():
            value = schema_defaults(sub)
            if value is not None:
                out[name] = value
        return out
    return copy.deepcopy(schema.get("default"))


def without_defaults(value: Any, schema: dict[str, Any] | None = None) -> Any:
    """The options with every value equal to its schema default left out: what the user chose.

    An upgrade that adds an option (with its default) leaves this unchanged, so a job recorded
    by the older version still resumes."""
    schema = load_schema() if schema is None else schema
    if not isinstance(value, dict) or schema.get("type") != "object":
        return value
    props, extra = schema.get("properties", {}), schema.get("additionalProperties")
    out = {}
    for key, item in value.items():
        sub = props.get(key, extra if isinstance(extra, dict) else {})
        if sub and item == schema_defaults(sub):
            continue
        chosen = without_defaults(item, sub)
        if sub and isinstance(item, dict) and chosen == {}:
            continue  # all defaults, some left out (written before options were added there)
        out[key] = chosen
    return out


def deep_merge(base: Any, override: Any) -> Any:
    """Cosmos' merge: objects merge key by key; arrays and scalars in ``override`` replace."""
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for key, value in override.items():
            merged[key] = deep_merge(base[key], value) if key in base else copy.deepcopy(value)
        return merged
    return copy.deepcopy(override)


def _expected(error: Any) -> str:
    """What the schema wanted, phrased for a person."""
    kind, arg, schema = error.validator, error.validator_value, error.schema
    if kind == "type":
        return f"expected {' or '.join(arg) if isinstance(arg, list) else arg}"
    if kind == "enum":
        return "expected one of " + ", ".join(json.dumps(v) for v in arg)
    if kind == "minimum":
        op = ">" if schema.get("exclusiveMinimum") else ">="
        return f"expected a number {op} {arg}"
    if kind == "maximum":
        op = "<" if schema.get("exclusiveMaximum") else "<="
        return f"expected a number {op} {arg}"
    if kind == "pattern":
        return "expected " + PATTERN_WORDS.get(arg, f"a string matching {arg}")
    if kind == "minLength":
        return f"expected a string of at least {arg} characters"
    return error.message


# The schema's patterns as a person reads them (a regex is no answer to "what name may I use?").
PATTERN_WORDS = {
    "^[a-z0-9]([a-z0-9-]*[a-z0-9])?(/[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$":
        "lowercase letters, digits and '-' (not first or last), in parts joined by '/': e.g. mnist-1 or team/mnist",
    "^[A-Za-z_][A-Za-z0-9_]*=.*$": "NAME=VALUE, NAME of letters, digits and '_' (not a digit first)",
    "^[^:]+:[^:]+(:(ro|rw|RO|RW))?$": "HOST_PATH:CONTAINER_PATH, optionally :ro or :rw",
    "^(|zk://.+)$": "empty or zk://HOST:PORT[,HOST:PORT]/PATH",
    "^(\\*|[^/\\s*.,-][^/\\s,]*(/[^/\\s*.,-][^/\\s,]*)*)(,(\\*|[^/\\s*.,-][^/\\s,]*(/[^/\\s*.,-][^/\\s,]*)*))*$":
        "* or Mesos role names joined by ',' (each '/'-separated parts, no spaces, not starting with '.' or '-')",
    "^[A-Za-z_][A-Za-z0-9_]*=(env:[A-Za-z_][A-Za-z0-9_]*|file:[^\\s].*|[A-Za-z0-9_.-][A-Za-z0-9_./-]*)$":
        "NAME=SOURCE, SOURCE being env:VAR, file:PATH or a secret store's name (e.g. AWS_KEY=team-a/aws-key)",
    "^[A-Za-z0-9_.-][^=\\s]*=(env:[A-Za-z_][A-Za-z0-9_]*|file:[^\\s].*|[A-Za-z0-9_.-][A-Za-z0-9_./-]*)$":
        "PATH=SOURCE, PATH relative to the sandbox, SOURCE being env:VAR, file:PATH or a secret store's name",
    "^[A-Za-z][A-Za-z0-9_.-]*:[0-9]+(\\.[0-9]+)?$":
        "NAME:AMOUNT, a Mesos scalar resource (NAME of letters, digits, '_', '.', '-', a letter first) and a "
        "number >= 0: e.g. fpgas:1",
}


@dataclass(frozen=True)
class SchemaProblem:
    """One line of what the schema refuses, and the part of the document it is about."""

    path: tuple[Any, ...]
    line: str


def _describe(error: Any) -> list[SchemaProblem]:
    path = tuple(error.absolute_path)
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extras = sorted(set(error.instance) - set(allowed))
        return [SchemaProblem(path + (key,), f"{json_path(path + (key if len(key) <= 60 else key[:60] + '...',))}: "
                                             f"unknown field; expected one of: {', '.join(allowed)}")
                for key in extras]
    if error.validator == "required":
        return [SchemaProblem(path, f"{json_path(path)}: {error.message}")]
    from ..masking import is_env_path, mask_entry

    shown = mask_entry(error.instance) if is_env_path(list(path)) else error.instance
    return [SchemaProblem(path, f"{json_path(path)}: {_shown(shown)} is invalid: {_expected(error)}")]


def _shown(value: Any, limit: int = 120) -> str:
    """The offending value as JSON, cut: a 100 MB value must not be echoed back."""
    text = json.dumps(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


@lru_cache(maxsize=1)
def _compiled_check() -> Callable[[Any], bool] | None:
    from .schema_check import compile_schema

    return compile_schema(load_schema())


def schema_problems(options: Any) -> list[SchemaProblem]:
    """What the schema refuses in a resolved document, in document order ([] when valid)."""
    check = _compiled_check()
    if check is not None and check(options):
        return []  # valid as jsonschema would find it (schema_check.py): its ~0.1 s import is spared
    # Imported here: every executor imports this module (via spec.py) and never validates.
    import jsonschema

    validator = jsonschema.Draft4Validator(load_schema())
    errors = sorted(validator.iter_errors(options), key=lambda e: list(map(str, e.absolute_path)))
    return [problem for error in errors for problem in _describe(error)]


def validate(options: dict[str, Any]) -> None:
    problems = schema_problems(options)
    if problems:
        raise OptionsError([p.line for p in problems])


def repaired(options: dict[str, Any], problems: list[SchemaProblem]) -> tuple[dict[str, Any], list[tuple[Any, ...]]]:
    """The document with each part the schema refused set back to its default (an unknown field
    left out, an array replaced whole), and the paths so repaired: the checks that span fields
    can then look at the rest of it in the same round, and what they say about a repaired part
    is left unsaid (it would be about the default, not the user's value)."""
    out = copy.deepcopy(options)
    schema = load_schema()
    done: list[tuple[Any, ...]] = []
    for problem in problems:
        path = _repairable(schema, problem.path)
        if any(path[:len(d)] == d for d in done):
            continue  # inside a part already repaired
        parent, subschema = out, schema
        for part in path[:-1]:
            parent, subschema = parent[part], subschema.get("properties", {}).get(part, {})
        if not path:
            out = schema_defaults(schema)
        elif path[-1] in subschema.get("properties", {}):
            parent[path[-1]] = schema_defaults(subschema["properties"][path[-1]])
        else:
            del parent[path[-1]]  # an unknown field
        done.append(path)
    return out, done


def _repairable(schema: dict[str, Any], path: tuple[Any, ...]) -> tuple[Any, ...]:
    """The longest start of ``path`` made of object properties (and one unknown field last): an
    array's item is repaired by its whole array, whose default the schema holds."""
    out: list[Any] = []
    for part in path:
        if isinstance(part, int) or schema.get("type") != "object":
            break
        out.append(part)
        if part not in schema.get("properties", {}):
            break
        schema = schema["properties"][part]
    return tuple(out)


def with_defaults(user_options: Any) -> dict[str, Any]:
    """The schema's defaults with the user's options merged over them (not yet validated)."""
    if not isinstance(user_options, dict):
        raise OptionsError([f"$: {_shown(user_options, 60)} is invalid: expected an object"])
    return deep_merge(schema_defaults(load_schema()), user_options)


def resolve_options(user_options: Any) -> dict[str, Any]:
    """Defaults from the schema, the user's options merged over them, then validated."""
    resolved = with_defaults(user_options)
    validate(resolved)
    return resolved


def read_options_file(path: str | Path) -> Any:
    """Parse a file (JSON, or YAML by extension), with the file name and position in any message."""
    from .files import read_document

    return read_document(path)


def load_options_file(path: str | Path) -> dict[str, Any]:
    data = read_options_file(path)
    try:
        return resolve_options(data)
    except OptionsError as exc:
        from .files import with_yaml_lines

        raise with_yaml_lines(exc, Path(path)) from None
