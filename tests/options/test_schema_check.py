"""The compiled schema check (tfmesos/options/schema_check.py) says "valid" exactly where
jsonschema finds no error, so that ``load.validate`` may skip jsonschema for valid options and
still report every invalid document through it, word for word."""
from __future__ import annotations

import copy
import json
import subprocess
import sys
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterator

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings

from tfmesos.options.load import OptionsError, load_schema, resolve_options, schema_defaults
from tfmesos.options.schema_check import compile_schema
from tests.options.test_property import NEAR_SCHEMA

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = load_schema()
CHECK = compile_schema(SCHEMA)
JUDGE = jsonschema.Draft4Validator(SCHEMA)
DEFAULTS = schema_defaults(SCHEMA)
PROBES: list[Any] = [None, True, False, 0, -1, 1, 2, 0.5, -0.5, 1.0, 1e9, 2 ** 70, "", "x", "a b", "-1", "chief",
                     [], [1], ["x"], {}, {"k": 1}, {"name": "x"}]


def _valid(doc: Any) -> bool:
    return next(JUDGE.iter_errors(doc), None) is None


def _paths(doc: Any, path: tuple = ()) -> Iterator[tuple]:
    yield path
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _paths(value, path + (key,))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from _paths(value, path + (i,))


def _with(doc: Any, path: tuple, value: Any) -> Any:
    out = copy.deepcopy(doc)
    if not path:
        return value
    node = out
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return out


def _mutants() -> Iterator[Any]:
    """The defaults and the examples, each field in turn replaced by every probe; unknown fields added."""
    bases = [DEFAULTS] + [resolve_options(json.loads(p.read_text())) for p in sorted(ROOT.glob("examples/*/options.json"))]
    for base in bases:
        for path in _paths(base):
            for probe in PROBES:
                yield _with(base, path, probe)
            node = _with(base, (), base)
            for part in path:
                node = node[part]
            if isinstance(node, dict):
                yield _with(base, path, {**node, "no_such_field": 1})
                for key in list(node)[:3]:
                    yield _with(base, path, {k: v for k, v in node.items() if k != key})


def test_the_schema_compiles() -> None:
    assert CHECK is not None, "config-schema.json uses a keyword schema_check.py does not know: every run pays jsonschema"


def test_the_defaults_and_every_example_pass_the_fast_path() -> None:
    examples = sorted(ROOT.glob("examples/*/options.json"))
    assert examples
    assert CHECK(DEFAULTS)
    for path in examples:
        assert CHECK(resolve_options(json.loads(path.read_text()))), path


def test_agrees_with_jsonschema_on_every_field_mutant() -> None:
    seen = {True: 0, False: 0}
    for doc in _mutants():
        verdict = CHECK(doc)
        assert verdict == _valid(doc), json.dumps(doc)[:500]
        seen[verdict] += 1
    assert seen[True] > 100 and seen[False] > 100, seen


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(NEAR_SCHEMA)
def test_agrees_with_jsonschema_on_documents_near_the_schema(user: Any) -> None:
    doc = user if not isinstance(user, dict) else {**DEFAULTS, **user}
    assert CHECK(doc) == _valid(doc)


class _Text(str):
    pass


class _Object(dict):
    pass


@pytest.mark.parametrize("value", [float("nan"), _Text("x"), _Object(), Decimal(1), Fraction(1, 2)],
                         ids=["nan", "str-subclass", "dict-subclass", "decimal", "fraction"])
def test_values_of_no_json_type_go_to_jsonschema(value: Any) -> None:
    """jsonschema finds each valid; the check is unsure of each, so it answers False (jsonschema decides)."""
    schema = {"properties": {"a": {"type": ["number", "string", "object"], "minimum": 0, "minLength": 0}}}
    check = compile_schema(schema)
    assert check is not None and check({"a": 1}) and check({"a": "x"}) and check({"a": {}})
    assert next(jsonschema.Draft4Validator(schema).iter_errors({"a": value}), None) is None
    assert check({"a": value}) is False


@pytest.mark.parametrize("schema", [
    {"oneOf": [{"type": "string"}]},
    {"properties": {"a": {"$ref": "#"}}},
    {"items": [{"type": "string"}]},
    {"type": "object", "additionalProperties": {"format": "uri"}},
    {"enum": [[1]]},
    {"type": "date"},
])
def test_a_schema_with_an_unknown_keyword_does_not_compile(schema: dict) -> None:
    assert compile_schema(schema) is None


def test_invalid_options_still_name_their_path() -> None:
    with pytest.raises(OptionsError) as caught:
        resolve_options({"roles": {"chief": {"count": -1}}, "no_such_field": 1})
    assert any(p.startswith("$.roles.chief.count: -1 is invalid") for p in caught.value.problems)
    assert any(p.startswith("$.no_such_field: unknown field") for p in caught.value.problems)


def test_valid_options_load_without_importing_jsonschema(tmp_path: Path) -> None:
    options = tmp_path / "job.json"
    options.write_text(json.dumps({"job": {"command": "true"}, "roles": {"chief": {"count": 1}}}))
    code = ("import sys; from tfmesos.options.load import load_options_file; "
            f"load_options_file({str(options)!r}); print(sorted(m for m in sys.modules if m.startswith('jsonschema')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip() == "[]"
