"""`tfmesos package build`: a universe repository DC/OS can add, valid under v4-repo-schema.json."""
import argparse
import base64
import json

import jsonschema
import referencing
from referencing.jsonschema import DRAFT4

from tfmesos.package.checks import check_package
from tfmesos.package.cli import add_subcommands
from tfmesos.package.repo import CONTENT_TYPE

from tests.package.helpers import PACKAGE_DIR, REFERENCE, reference


def v4_repo_validator() -> jsonschema.Draft4Validator:
    # The v4 schema refers to vX-repo-definitions.json by a relative path, as in the universe.
    base = REFERENCE.resolve().as_uri() + "/"
    definitions = referencing.Resource.from_contents(reference("vX-repo-definitions.json"), DRAFT4)
    registry = referencing.Registry().with_resource(base + "vX-repo-definitions.json", definitions)
    schema = {**reference("v4-repo-schema.json"), "id": base + "v4-repo-schema.json"}
    return jsonschema.Draft4Validator(schema, registry=registry)


def test_package_build_writes_a_valid_universe_repository(tmp_path, capsys):
    parser = argparse.ArgumentParser(prog="tfmesos")
    add_subcommands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["package", "build", str(tmp_path / "out"), "--base-url", "https://repo.example/tfmesos/"])
    assert args.func(args) == 0
    out = tmp_path / "out"
    assert str(out / "repo.json") in capsys.readouterr().out

    index = json.loads((out / "repo.json").read_text(encoding="ascii"))
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in v4_repo_validator().iter_errors(index)]
    assert errors == []
    [entry] = index["packages"]
    assert (entry["name"], entry["version"], entry["releaseVersion"], entry["packagingVersion"]) == ("tfmesos", "0.1.0", 0, "4.0")
    template = base64.b64decode(entry["marathon"]["v2AppMustacheTemplate"])
    assert template == (PACKAGE_DIR / "marathon.json.mustache").read_bytes()
    assert entry["config"] == json.loads((PACKAGE_DIR / "config.json").read_text())
    assert (out / "repo.content_type").read_text() == CONTENT_TYPE

    folder = out / "repo" / "packages" / "T" / "tfmesos" / "0"
    for name in ("package.json", "config.json", "marathon.json.mustache"):
        assert (folder / name).read_bytes() == (PACKAGE_DIR / name).read_bytes()
    assert check_package(folder, REFERENCE) == []
    # The icons: served beside the index, named by the URL given, byte for byte the package's.
    committed = json.loads((PACKAGE_DIR / "resource.json").read_text())
    served = json.loads((folder / "resource.json").read_text())
    assert entry["resource"] == served and served["assets"] == committed["assets"]
    assert sorted(served["images"]) == sorted(committed["images"]) == ["icon-large", "icon-medium", "icon-small"]
    for name, path in committed["images"].items():
        assert served["images"][name] == f"https://repo.example/tfmesos/{path}"
        assert (out / path).read_bytes() == (PACKAGE_DIR / path).read_bytes()


def test_package_build_takes_the_image_pushed_to_your_registry_and_refuses_a_base_that_is_no_url(tmp_path, capsys):
    parser = argparse.ArgumentParser(prog="tfmesos")
    add_subcommands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["package", "build", str(tmp_path / "a"), "--base-url", "http://h:8080",
                              "--image", "registry.example:5000/tfmesos/tfmesos:0.1.0"])
    assert args.func(args) == 0
    [entry] = json.loads((tmp_path / "a" / "repo.json").read_text())["packages"]
    assert entry["resource"]["assets"]["container"]["docker"]["tfmesos"] == "registry.example:5000/tfmesos/tfmesos:0.1.0"
    assert entry["resource"]["images"]["icon-small"] == "http://h:8080/images/icon-small.png"

    args = parser.parse_args(["package", "build", str(tmp_path / "b"), "--base-url", "/srv/repo"])
    assert args.func(args) == 1
    assert "--base-url: '/srv/repo': expected the http(s):// URL" in capsys.readouterr().err
    assert not (tmp_path / "b").exists()


def test_the_validator_is_not_vacuous():
    broken = {"packages": [{"packagingVersion": "4.0", "name": "tfmesos", "version": "0.1.0"}]}
    assert not v4_repo_validator().is_valid(broken)
