"""Render the package's Marathon app the way DC/OS Cosmos (0.6 and later, DC/OS 1.12+) does.

Cosmos takes the defaults of ``config.json``, merges the user's options over them, validates
the result, adds ``resource`` (the package's ``resource.json``) and renders
``marathon.json.mustache`` with mustache.java after turning the JSON into Java values:

* strings are JSON-escaped; the surrounding quotes are dropped, except for the elements of an
  array, which keep them (so ``{{#list}}{{.}}, {{/list}}`` yields ``"a", "b", ``);
* whole numbers that fit an ``int`` are Integers, other numbers Doubles (written the Java way:
  ``0.5``, ``1.0E-4``, ``3.0E9``);
* booleans render ``true`` / ``false``; arrays render like Java lists (``["a", "b"]``);
* nothing is HTML-escaped.

For sections mustache.java takes ``false``, ``null``, ``""`` and empty lists as false and every
number (0 included) as true. The values below behave the same way under chevron, which does
the rendering here; variable tags are turned into unescaped ones to match Cosmos' escaping.
Cosmos then requires a JSON object whose ``labels`` are all strings.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, ClassVar, Mapping

import chevron
from chevron.tokenizer import ChevronError, tokenize

from ..options.load import OptionsError, resolve_options
from .files import PackageFiles

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1


class RenderError(ValueError):
    """The template does not produce a Marathon app (a template bug, not a user error)."""


@dataclass(frozen=True)
class JavaBoolean:
    value: bool
    # chevron would otherwise replace a false value by "" when it is printed.
    _CHEVRON_return_scope_when_falsy: ClassVar[bool] = True

    def __bool__(self) -> bool:
        return self.value

    def __str__(self) -> str:
        return "true" if self.value else "false"


class JavaNumber(str):
    """A number's Java text; never empty, so true in a section as mustache.java has it."""


class JavaList(list):
    _CHEVRON_return_scope_when_falsy: ClassVar[bool] = True  # "[]", not "", when printed

    def __str__(self) -> str:
        return "[" + ", ".join(str(item) for item in self) + "]"


def java_double(value: float) -> str:
    """``Double.toString``: plain between 1e-3 and 1e7, else ``d.dddE<n>``; shortest digits."""
    if value == 0:
        return "-0.0" if str(value).startswith("-") else "0.0"
    sign = "-" if value < 0 else ""
    exact = Decimal(repr(abs(value))).as_tuple()
    digits = "".join(map(str, exact.digits)).rstrip("0") or "0"
    point = len(exact.digits) + int(exact.exponent)  # value = 0.<digits> * 10**point
    if 1e-3 <= abs(value) < 1e7:
        if point <= 0:
            whole, frac = "0", "0" * -point + digits
        else:
            whole, frac = digits[:point].ljust(point, "0"), digits[point:]
        return f"{sign}{whole}.{frac or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{point - 1}"


def cosmos_value(value: Any, in_array: bool = False) -> Any:
    """One JSON value as Cosmos hands it to mustache.java."""
    if isinstance(value, bool):
        return JavaBoolean(value)
    if isinstance(value, (int, float)):
        if float(value).is_integer() and _INT_MIN <= value <= _INT_MAX:
            return JavaNumber(int(value))
        return JavaNumber(java_double(float(value)))
    if isinstance(value, str):
        quoted = json.dumps(value, ensure_ascii=False)
        return quoted if in_array else quoted[1:-1]
    if isinstance(value, list):
        return JavaList(cosmos_value(item, in_array=True) for item in value)
    if isinstance(value, dict):
        return {key: cosmos_value(item) for key, item in value.items()}
    return value  # null


def cosmos_context(options: Mapping[str, Any], resource: Mapping[str, Any]) -> dict[str, Any]:
    """The resolved options with ``resource`` added, as mustache.java sees them."""
    return cosmos_value({**options, "resource": resource})


def render_template(template: str, context: Mapping[str, Any]) -> str:
    try:
        tokens = list(tokenize(template))
    except ChevronError as exc:
        raise RenderError(f"marathon.json.mustache is not valid Mustache: {exc}") from None
    if any(tag == "partial" for tag, _ in tokens):
        raise RenderError("marathon.json.mustache uses a partial; Cosmos has none to offer")
    unescaped = [("no escape", key) if tag == "variable" else (tag, key) for tag, key in tokens]
    return chevron.render(unescaped, dict(context), partials_path=None)


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    duplicates = sorted({key for key in keys if keys.count(key) > 1})
    if duplicates:
        raise RenderError(f"the rendered app repeats the key(s) {', '.join(duplicates)}")
    return dict(pairs)


def parse_app(text: str) -> dict[str, Any]:
    """The rendered text as an app definition, with Cosmos' own checks on it."""
    try:
        app = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as exc:
        excerpt = text.splitlines()[exc.lineno - 1] if exc.lineno <= len(text.splitlines()) else ""
        raise RenderError(f"the rendered app is not JSON: {exc.msg} at line {exc.lineno}: {excerpt.strip()[:120]}") from None
    if not isinstance(app, dict):
        raise RenderError("the rendered app is not a JSON object")
    bad = [key for key, value in app.get("labels", {}).items() if not isinstance(value, str)]
    if bad:
        raise RenderError(f"labels must be strings: {', '.join(bad)}")
    return app


def render_app(user_options: Any, files: PackageFiles) -> dict[str, Any]:
    """The Marathon app for ``user_options``; OptionsError names any bad option."""
    options = resolve_options(user_options)
    service = options["service"]
    if service["secret_name"] and not service["principal"]:
        # The scheduler would refuse MESOS_SECRET without a principal at every start, and Marathon restart it.
        raise OptionsError([f"$.service.secret_name: {service['secret_name']!r} without $.service.principal: expected "
                            "the principal that secret belongs to, or no secret_name"])
    return parse_app(render_template(files.template, cosmos_context(options, files.resource)))
