"""The options schema compiled into a yes/no check, so that valid options skip jsonschema.

Importing jsonschema (with attrs, referencing and its metaschemas) costs more than the rest of
``tfmesos run``'s start. Nearly every run's options are valid, and a valid document needs no error
messages: ``compile_schema`` turns ``config-schema.json`` itself (nothing is restated here) into
nested checks for the Draft 4 keywords it uses. A check answers True only where jsonschema's
Draft4Validator would find no error; wherever it is unsure (a number of another Python type, a
string subclass, a NaN) it answers False, and ``load.validate`` asks jsonschema, which stays the
one judge of invalid options and the one author of their messages. A schema with any keyword
this module does not know compiles to None: then every document goes to jsonschema.
"""
from __future__ import annotations

import re
from typing import Any, Callable

Check = Callable[[Any], bool]

# Keywords that never make a document invalid.
ANNOTATIONS = frozenset({"$schema", "title", "description", "default"})
_PLAIN = (str, int, float, bool, type(None))  # the types whose equality matches jsonschema's ``equal``

# Draft 4 types (jsonschema's draft4 type checker), exact Python types only: anything else is "unsure".
_TYPES: dict[str, Check] = {
    "object": lambda x: type(x) is dict,
    "array": lambda x: type(x) is list,
    "string": lambda x: type(x) is str,
    "integer": lambda x: type(x) is int,
    "number": lambda x: type(x) is int or type(x) is float,
    "boolean": lambda x: type(x) is bool,
    "null": lambda x: x is None,
}


class Unsupported(Exception):
    """The schema uses something this compiler does not know: jsonschema validates every document."""


def compile_schema(schema: Any) -> Check | None:
    """``check(document)``: True only where the schema surely holds; None if the schema can't be compiled."""
    try:
        return _compile(schema)
    except Unsupported:
        return None


def _applies(kind: type, check: Check) -> Check:
    """A keyword that constrains only instances of ``kind`` (JSON's object, array or string)."""
    def applies(x: Any) -> bool:
        if type(x) is kind:
            return check(x)
        return not isinstance(x, kind)  # a subclass: unsure; another type: the keyword does not apply

    return applies


def _numeric(check: Check) -> Check:
    """A keyword that constrains only numbers (bools are not numbers)."""
    def applies(x: Any) -> bool:
        if type(x) is int or type(x) is float:
            return check(x)
        return isinstance(x, (str, list, dict, bool, type(None)))  # surely not a number; else unsure

    return applies


def _compile(schema: Any) -> Check:
    if not isinstance(schema, dict):
        raise Unsupported(f"a schema that is not an object: {schema!r}")
    unknown = set(schema) - ANNOTATIONS - set(_KEYWORDS)
    if unknown:
        raise Unsupported(f"keywords {sorted(unknown)}")
    checks = [_KEYWORDS[k](schema[k], schema) for k in schema if k in _KEYWORDS]
    checks = [c for c in checks if c is not None]
    if not checks:
        return lambda x: True
    if len(checks) == 1:
        return checks[0]
    return lambda x: all(check(x) for check in checks)


def _type(value: Any, schema: dict[str, Any]) -> Check:
    names = value if isinstance(value, list) else [value]
    if not names or any(name not in _TYPES for name in names):
        raise Unsupported(f"type {value!r}")
    tests = [_TYPES[name] for name in names]
    return lambda x: any(test(x) for test in tests)


def _enum(values: Any, schema: dict[str, Any]) -> Check:
    if not isinstance(values, list) or any(type(v) not in _PLAIN for v in values):
        raise Unsupported(f"enum {values!r}")
    return lambda x: any(type(v) is type(x) and v == x for v in values)


def _bound(keyword: str, exclusive: str, holds: Callable[[Any, Any, bool], bool]) -> Callable[..., Check]:
    def make(bound: Any, schema: dict[str, Any]) -> Check:
        strict = schema.get(exclusive, False)
        if type(bound) not in (int, float) or type(strict) is not bool:
            raise Unsupported(f"{keyword} {bound!r}")
        return _numeric(lambda x: holds(x, bound, strict))

    return make


def _exclusive(value: Any, schema: dict[str, Any]) -> None:
    if type(value) is not bool:
        raise Unsupported(f"exclusive bound {value!r}")
    return None  # read by minimum/maximum (Draft 4)


def _pattern(value: Any, schema: dict[str, Any]) -> Check:
    search = re.compile(value).search
    return _applies(str, lambda x: search(x) is not None)


def _min_length(value: Any, schema: dict[str, Any]) -> Check:
    if type(value) is not int:
        raise Unsupported(f"minLength {value!r}")
    return _applies(str, lambda x: len(x) >= value)


def _required(names: Any, schema: dict[str, Any]) -> Check:
    if not isinstance(names, list) or any(type(n) is not str for n in names):
        raise Unsupported(f"required {names!r}")
    return _applies(dict, lambda x: all(n in x for n in names))


def _properties(props: Any, schema: dict[str, Any]) -> Check:
    if not isinstance(props, dict):
        raise Unsupported(f"properties {props!r}")
    compiled = [(name, _compile(sub)) for name, sub in props.items()]
    return _applies(dict, lambda x: all(check(x[name]) for name, check in compiled if name in x))


def _additional(extra: Any, schema: dict[str, Any]) -> Check | None:
    known = set(schema.get("properties", {}))
    if extra is True:
        return None
    if extra is False:
        return _applies(dict, lambda x: all(key in known for key in x))
    check = _compile(extra)
    return _applies(dict, lambda x: all(check(v) for key, v in x.items() if key not in known))


def _items(items: Any, schema: dict[str, Any]) -> Check:
    if not isinstance(items, dict):
        raise Unsupported("items as a list (tuple validation)")
    check = _compile(items)
    return _applies(list, lambda x: all(check(item) for item in x))


_KEYWORDS: dict[str, Callable[[Any, dict[str, Any]], Check | None]] = {
    "type": _type,
    "enum": _enum,
    "minimum": _bound("minimum", "exclusiveMinimum", lambda x, b, strict: x > b if strict else x >= b),
    "maximum": _bound("maximum", "exclusiveMaximum", lambda x, b, strict: x < b if strict else x <= b),
    "exclusiveMinimum": _exclusive,
    "exclusiveMaximum": _exclusive,
    "pattern": _pattern,
    "minLength": _min_length,
    "required": _required,
    "properties": _properties,
    "additionalProperties": _additional,
    "items": _items,
}
