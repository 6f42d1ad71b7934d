"""The package passes the universe's own checks, and config.json is config-schema.json."""
import shutil

import pytest

from tfmesos.package.checks import check_package

from tests.package.helpers import PACKAGE_DIR, REFERENCE, ROOT


def test_committed_package_passes_the_universe_checks():
    assert check_package(PACKAGE_DIR, REFERENCE) == []


def test_config_json_is_the_options_schema_byte_for_byte():
    assert (PACKAGE_DIR / "config.json").read_bytes() == (ROOT / "config-schema.json").read_bytes(), (
        "config-schema.json changed: cp config-schema.json universe-package/config.json"
    )


@pytest.mark.parametrize(
    "file, edit, expected",
    [
        ("package.json", lambda t: t.replace('"name": "tfmesos",', '"name": "tfmesos", "name": "x",'), "duplicate key 'name'"),
        ("package.json", lambda t: t.replace("Distributed", "Distribut\u00e9d"), "non-ASCII characters U+00E9"),
        ("package.json", lambda t: t.replace("Distributed", "Distribut\\u00e9d"), "contains a \\uXXXX escape"),
        ("package.json", lambda t: t.replace('"4.0"', '"4.1"'), "package.json: (top): "),
        ("config.json", lambda t: t.replace('"required": [\n        "name"\n      ]', '"required": []'), "config.json: properties/service/required: [] should be non-empty"),
        ("resource.json", lambda t: t.replace('"images"', '"pictures"'), "resource.json: (top): Additional properties"),
        ("marathon.json.mustache", lambda t: t.replace("{{roles.worker.count}}", "{{roles.workers.count}}"),
         "{{roles.workers.count}} names no option"),
        ("marathon.json.mustache", lambda t: t.replace("{{/service.user}}", ""), "not valid Mustache"),
    ],
    ids=["dup-key", "non-ascii", "u-escape", "package-schema", "config-meta-schema", "resource-schema", "unknown-tag", "unclosed-section"],
)
def test_the_checks_catch_what_the_universe_rejects(tmp_path, file, edit, expected):
    copy = tmp_path / "pkg"
    shutil.copytree(PACKAGE_DIR, copy, ignore=shutil.ignore_patterns("README.md"))
    text = (copy / file).read_text(encoding="utf-8")
    changed = edit(text)
    assert changed != text, "the edit must apply to the current file"
    (copy / file).write_text(changed, encoding="utf-8")
    problems = check_package(copy, REFERENCE)
    assert any(expected in p for p in problems), problems
