"""Property: whatever JSON a user writes, the options loader either accepts it or raises
``OptionsError`` whose every problem names a JSON path (or the file). Never another exception,
never an unbounded message.
"""
from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfmesos.options.load import OptionsError, load_schema, resolve_options
from tfmesos.options.files import read_document
from tfmesos.scheduler.preflight import option_problems
from tfmesos.options.jobspec import job_spec_from_options

SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=30)
ANY_JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
                        max_leaves=25)


def _field_values(schema: dict) -> st.SearchStrategy:
    """Values near the schema: its own enums and defaults mixed with arbitrary JSON."""
    choices = [ANY_JSON]
    if "enum" in schema:
        choices.append(st.sampled_from(schema["enum"]))
    if "default" in schema:
        choices.append(st.just(schema["default"]))
    if schema.get("type") == "object" and "properties" in schema:
        choices.append(st.fixed_dictionaries({}, optional={k: _field_values(v) for k, v in schema["properties"].items()}))
    return st.one_of(*choices)


NEAR_SCHEMA = _field_values(load_schema())


def _load(options: object) -> None:
    spec = job_spec_from_options(resolve_options(options))
    problems = option_problems(spec)
    if problems:
        raise OptionsError(problems)


def _check(options: object) -> None:
    try:
        _load(options)
    except OptionsError as exc:
        assert exc.problems, "an OptionsError without a problem"
        for problem in exc.problems:
            assert problem.startswith("$"), problem
        assert len(str(exc)) < 20_000


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ANY_JSON)
def test_any_json_is_accepted_or_refused_with_a_path(options):
    _check(options)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(NEAR_SCHEMA)
def test_schema_shaped_json_is_accepted_or_refused_with_a_path(options):
    _check(options)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=200) | ANY_JSON.map(lambda v: json.dumps(v).encode()))
def test_any_file_content_is_read_or_refused_naming_the_file(tmp_path: Path, content: bytes):
    path = tmp_path / "o.json"
    path.write_bytes(content)
    try:
        _load(read_document(path))
    except OptionsError as exc:
        assert all(p.startswith(("$", str(path))) for p in exc.problems), exc.problems
