"""NaN and Infinity in an options file are refused naming the field, the line and the column."""
from __future__ import annotations

from pathlib import Path

import pytest

from tfmesos.options.load import OptionsError
from tfmesos.options.files import read_document

pytestmark = pytest.mark.unit

DOC = '{"service": {"name": "a \\"NaN\\" Infinity"},\n  "roles": {"worker": {"count": 1, "cpus":  %s}, "ps": {"mem": NaN}}}\n'


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_a_constant_is_refused_with_field_line_and_column(tmp_path: Path, literal: str):
    path = tmp_path / "options.json"
    path.write_text(DOC % literal)
    with pytest.raises(OptionsError) as err:
        read_document(path)
    (problem,) = err.value.problems
    column = DOC.splitlines()[1].index("%s") + 1
    assert problem.startswith(f"$.roles.worker.cpus: {literal} at line 2 column {column} of {path}"), problem
    assert "finite number" in problem


def test_the_words_inside_strings_are_text(tmp_path: Path):
    path = tmp_path / "options.json"
    path.write_text(DOC.replace("NaN}", "512}") % "0.5")
    assert read_document(path)["service"]["name"] == 'a "NaN" Infinity'


def test_a_constant_in_a_list_names_its_index(tmp_path: Path):
    path = tmp_path / "options.json"
    path.write_text('{"job": {"env": ["A=1",\nNaN]}}')
    with pytest.raises(OptionsError) as err:
        read_document(path)
    assert err.value.problems[0].startswith(f"$.job.env[1]: NaN at line 2 column 1 of {path}")
