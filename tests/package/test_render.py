"""The Marathon app as Cosmos renders it: valid for Marathon, the scheduler's command line, every
option reaching the scheduler, the secret only by reference, bad options named by path."""
import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tfmesos.options.load import OptionsError, load_schema, resolve_options, schema_defaults
from tfmesos.options.env import PREFIX, env_name, leaf_paths, options_from_env
from tfmesos.package.cli import add_subcommands
from tfmesos.package.files import load_package
from tfmesos.package.render import RenderError, cosmos_context, java_double, parse_app, render_template

from tests.package.fixtures import FULL_OPTIONS
from tests.package.helpers import app_definition_problems, example_options_files, render

SMALL_OPTIONS = {"service": {"name": "digits"}, "job": {"command": "python3 train.py"}, "roles": {"worker": {"count": 2}}}


def _get(doc: dict, path: tuple) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def run_scheduler_command(app: dict, tmp_path: Path) -> dict:
    """Run the app's args as Mesos would, with a stand-in `tfmesos` on PATH that records the
    environment and arguments it is started with (Marathon's own variables set by hand)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    seen = tmp_path / "seen.json"
    stub = bin_dir / "tfmesos"
    stub.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        "json.dump({'env': dict(os.environ), 'argv': sys.argv[1:]}, open(os.environ['STUB_OUT'], 'w'))\n"
    )
    stub.chmod(0o755)
    env = {name: value for name, value in app["env"].items() if isinstance(value, str)}
    env.update(PATH=f"{bin_dir}:/usr/bin:/bin", PORT0="31005", STUB_OUT=str(seen))
    subprocess.run(app["args"], env=env, cwd=tmp_path, check=True, timeout=60)
    return json.loads(seen.read_text())


# --- the app itself ------------------------------------------------------------------------

@pytest.mark.parametrize("options", [SMALL_OPTIONS, FULL_OPTIONS], ids=["small", "full"])
def test_rendered_app_is_a_valid_marathon_app(options):
    app = render(options)
    assert app_definition_problems(app) == []
    name = options["service"]["name"]
    assert app["id"] == f"/{name}"
    assert app["instances"] == 1
    assert app["upgradeStrategy"] == {"minimumHealthCapacity": 0, "maximumOverCapacity": 0}
    assert app["container"] == {"type": "MESOS", "docker": {"image": "tfmesos/tfmesos:0.1.0"}}
    assert app["portDefinitions"] == [{"port": 0, "protocol": "tcp", "name": "api"}]
    [check] = app["healthChecks"]
    assert (check["protocol"], check["path"], check["portIndex"]) == ("MESOS_HTTP", "/v1/health", 0)
    assert app["labels"] == {
        "MARATHON_SINGLE_INSTANCE_APP": "true",
        "DCOS_PACKAGE_FRAMEWORK_NAME": name,
        "DCOS_SERVICE_NAME": name,
        "DCOS_SERVICE_PORT_INDEX": "0",
        "DCOS_SERVICE_SCHEME": "http",
    }
    resolved = resolve_options(options)
    assert (app["cpus"], app["mem"]) == (resolved["service"]["cpus"], resolved["service"]["mem"])
    assert app["env"]["MESOS_MASTER"] == resolved["service"]["mesos_master"]
    assert "role" not in app  # Marathon >= 1.9 only; AppDefinition.json has no such field


@pytest.mark.parametrize("path", example_options_files(), ids=lambda p: p.parent.name)
def test_every_example_renders_to_a_valid_marathon_app(path, tmp_path):
    user_options = json.loads(path.read_text())
    app = render(user_options)
    assert app_definition_problems(app) == []
    assert app["id"] == "/" + user_options["service"]["name"]
    seen = run_scheduler_command(app, tmp_path)
    assert resolve_options(options_from_env(seen["env"])) == resolve_options(user_options)


def test_the_examples_exist_to_be_covered():
    assert {p.parent.name for p in example_options_files()} >= {"pss_digits", "mwms_digits"}


def test_user_and_zk_state_path():
    app = render(SMALL_OPTIONS)
    assert "user" not in app
    # The store keeps each job under its name: /tfmesos/digits/state (docs/running-on-mesos.md), where
    # `tfmesos status digits --zk zk://master.mesos:2181/tfmesos` reads it.
    assert app["env"]["TFMESOS_ZK"] == "zk://master.mesos:2181/tfmesos"
    full = render(FULL_OPTIONS)
    assert full["user"] == "nobody"
    assert full["env"]["TFMESOS_ZK"] == "zk://zk-1.example:2181/tfmesos-state/mnist"


# --- every option reaches the scheduler ------------------------------------------------------

def test_the_fixture_sets_every_leaf_to_a_non_default():
    defaults = schema_defaults(load_schema())
    same = [path for path, _ in leaf_paths() if _get(FULL_OPTIONS, path) == _get(defaults, path)]
    assert same == [], "extend tests/package/fixtures.py for the new option(s)"


def test_every_option_reaches_the_scheduler_unchanged(tmp_path):
    app = render(FULL_OPTIONS)
    seen = run_scheduler_command(app, tmp_path)
    names = {name for name in seen["env"] if name.startswith(PREFIX)}
    assert names == {env_name(path) for path, _ in leaf_paths()}
    assert resolve_options(options_from_env(seen["env"])) == resolve_options(FULL_OPTIONS)
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "pwned2").exists()
    assert seen["argv"][:2] == ["run", "--options-from-env"]
    assert seen["argv"][2:] == [
        "--master", FULL_OPTIONS["service"]["mesos_master"],
        "--zk", FULL_OPTIONS["service"]["zk"],
        "--api-port", "31005",
        "--api-host", "0.0.0.0",
    ]


def test_scalars_are_in_env_and_arrays_in_args():
    """What 'dcos marathon app show' displays: each scalar under its own name."""
    app = render(FULL_OPTIONS)
    for path, leaf in leaf_paths():
        if leaf["type"] == "array":
            assert env_name(path) not in app["env"]
            assert all(item in app["args"] for item in _get(FULL_OPTIONS, path))
        else:
            assert env_name(path) in app["env"], path


def test_scheduler_command_line_is_accepted_by_tfmesos_run(tmp_path):
    """The exec line must parse with the real 'tfmesos run' (needs its --api-host flag)."""
    from tfmesos.client.cli import build_parser

    seen = run_scheduler_command(render(SMALL_OPTIONS), tmp_path)
    args = build_parser().parse_args(seen["argv"])
    assert args.options_from_env and args.api_port == 31005
    assert args.zk == "zk://master.mesos:2181/tfmesos"
    assert args.api_host == "0.0.0.0"


# --- the secret -------------------------------------------------------------------------------

def _strings(node: Any, where: str = "") -> list[tuple[str, str]]:
    if isinstance(node, dict):
        return [s for key, value in node.items() for s in _strings(value, f"{where}/{key}")]
    if isinstance(node, list):
        return [s for i, value in enumerate(node) for s in _strings(value, f"{where}/{i}")]
    return [(where, node)] if isinstance(node, str) else []


def test_the_secret_reaches_the_scheduler_only_by_reference():
    app = render(FULL_OPTIONS)
    secret = FULL_OPTIONS["service"]["secret_name"]
    token = FULL_OPTIONS["service"]["api_token_secret"]
    zk_auth = FULL_OPTIONS["service"]["zk_auth_secret"]
    assert app["secrets"] == {"secret0": {"source": secret}, "secret1": {"source": token}, "secret2": {"source": zk_auth}}
    assert app["env"]["MESOS_SECRET"] == {"secret": "secret0"}
    assert app["env"]["TFMESOS_API_TOKEN"] == {"secret": "secret1"}
    assert app["env"]["TFMESOS_ZK_AUTH"] == {"secret": "secret2"}
    where = {path for path, value in _strings(app) if secret in value}
    # The secret's name (a path in the secret store) is also an option like any other.
    assert where == {"/secrets/secret0/source", "/env/TFMESOS_OPT_SERVICE_SECRET_NAME"}


def test_no_secret_no_secrets():
    app = render(SMALL_OPTIONS)
    assert "secrets" not in app and not {"MESOS_SECRET", "TFMESOS_API_TOKEN", "TFMESOS_ZK_AUTH"} & set(app["env"])


def test_an_api_token_alone_is_a_secret_of_its_own():
    options = {**SMALL_OPTIONS, "service": {**SMALL_OPTIONS["service"], "api_token_secret": "team/token"}}
    app = render(options)
    assert app["secrets"] == {"secret1": {"source": "team/token"}}
    assert app["env"]["TFMESOS_API_TOKEN"] == {"secret": "secret1"} and "MESOS_SECRET" not in app["env"]


def test_every_mix_of_the_three_secrets_is_one_secrets_object_of_exactly_those_given():
    """secret_name, api_token_secret and zk_auth_secret, each set or not: one valid "secrets"
    (a missing comma or a second "secrets" key would not parse), each env variable a reference."""
    import itertools

    given = {"secret_name": ("secret0", "MESOS_SECRET"), "api_token_secret": ("secret1", "TFMESOS_API_TOKEN"),
             "zk_auth_secret": ("secret2", "TFMESOS_ZK_AUTH")}
    for chosen in itertools.product((False, True), repeat=3):
        names = [name for name, on in zip(given, chosen) if on]
        service = {**SMALL_OPTIONS["service"], **{n: f"team/{n}" for n in names},
                   **({"principal": "p"} if "secret_name" in names else {})}
        app = render({**SMALL_OPTIONS, "service": service})
        assert app.get("secrets", {}) == {given[n][0]: {"source": f"team/{n}"} for n in names}, names
        assert {v: app["env"].get(v) for _, v in given.values() if v in app["env"]} == {
            given[n][1]: {"secret": given[n][0]} for n in names}, names
        assert not app_definition_problems(app), names


# --- errors -----------------------------------------------------------------------------------

def test_a_bad_option_is_named_by_its_json_path():
    with pytest.raises(OptionsError) as exc:
        render({"service": {"name": "Bad Name"}, "roles": {"worker": {"count": -1, "cpus": "1"}}})
    text = "\n".join(exc.value.problems)
    assert "$.roles.worker.count: -1 is invalid: expected a number >= 0" in text
    assert "$.roles.worker.cpus: \"1\" is invalid: expected number" in text
    assert "$.service.name: \"Bad Name\" is invalid: expected lowercase letters, digits and '-'" in text


def test_a_secret_without_its_principal_is_refused_before_marathon_restarts_it_forever():
    options = {**SMALL_OPTIONS, "service": {**SMALL_OPTIONS["service"], "secret_name": "team/secret"}}
    with pytest.raises(OptionsError, match=r"\$\.service\.secret_name: 'team/secret' without \$\.service\.principal"):
        render(options)
    app = render({**options, "service": {**options["service"], "principal": "team"}})
    assert app["env"]["MESOS_SECRET"] == {"secret": "secret0"}


def test_package_render_command_prints_the_app_or_names_the_bad_field(tmp_path, capsys):
    parser = argparse.ArgumentParser(prog="tfmesos")
    add_subcommands(parser.add_subparsers(dest="command", required=True))
    good = tmp_path / "good.json"
    good.write_text(json.dumps(SMALL_OPTIONS))
    args = parser.parse_args(["package", "render", str(good)])
    assert args.func(args) == 0
    assert json.loads(capsys.readouterr().out) == render(SMALL_OPTIONS)

    # env values are printed hidden unless asked for; the app deployed carries them (deploy, DC/OS).
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({**SMALL_OPTIONS, "job": {**SMALL_OPTIONS.get("job", {}), "env": ["DB_PASSWORD=hunter2"]}}))
    args = parser.parse_args(["package", "render", str(secret)])
    assert args.func(args) == 0
    printed = capsys.readouterr().out
    assert "hunter2" not in printed and "DB_PASSWORD=<hidden>" in printed
    args = parser.parse_args(["package", "render", str(secret), "--show-env-values"])
    assert args.func(args) == 0
    assert "DB_PASSWORD=hunter2" in capsys.readouterr().out

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"roles": {"chief": {"count": 2}}}))
    args = parser.parse_args(["package", "render", str(bad)])
    assert args.func(args) == 1
    err = capsys.readouterr().err
    assert "$.roles.chief.count: 2 is invalid: expected a number <= 1" in err


# --- Cosmos' rendering rules ------------------------------------------------------------------

def test_java_doubles():
    assert [java_double(v) for v in (0.5, 1e-7, 0.001, 0.0001, 12345678.9, 3e9, 1e7, 9999999.5, 100.25)] == [
        "0.5", "1.0E-7", "0.001", "1.0E-4", "1.23456789E7", "3.0E9", "1.0E7", "9999999.5", "100.25",
    ]


def test_cosmos_rendering_rules():
    context = cosmos_context(
        {"s": "a \"b\" <c> & d\\e\nf", "empty": "", "list": ["x", "y\"z"], "none": [], "zero": 0, "no": False,
         "yes": True, "half": 0.5, "big": 3000000000, "whole": 512.0},
        {"img": "i:1"},
    )
    template = (
        '{"s": "{{s}}", "list": {{list}}, "items": [{{#list}}{{.}}, {{/list}}"end"], "none": {{none}},'
        ' "zero": {{zero}}, "zero_is_true": {{#zero}}true{{/zero}}{{^zero}}false{{/zero}},'
        ' "empty_is_false": {{^empty}}true{{/empty}}{{#empty}}false{{/empty}}, "no": {{no}}, "yes": {{yes}},'
        ' "not_no": {{^no}}true{{/no}}, "half": {{half}}, "big": {{big}}, "whole": {{whole}}, "img": "{{resource.img}}"}'
    )
    text = render_template(template, context)
    assert '"big": 3.0E9' in text and '"whole": 512,' in text
    assert json.loads(text) == {
        "s": "a \"b\" <c> & d\\e\nf", "list": ["x", "y\"z"], "items": ["x", "y\"z", "end"], "none": [],
        "zero": 0, "zero_is_true": True, "empty_is_false": True, "no": False, "yes": True, "not_no": True,
        "half": 0.5, "big": 3e9, "whole": 512, "img": "i:1",
    }


def test_the_package_config_is_what_the_options_resolve_against():
    assert load_package().config == load_schema()


def test_a_list_inside_a_json_string_is_not_json_under_cosmos():
    """Why the lists travel in "args": Cosmos keeps each list string's quotes."""
    context = cosmos_context({"job": {"uris": ["http://a/x.tgz", "http://b/y.tgz"]}}, {})
    with pytest.raises(RenderError, match="not JSON"):
        parse_app(render_template('{"env": {"U": "{{#job.uris}}{{.}}\\n{{/job.uris}}"}}', context))
    as_args = parse_app(render_template('{"args": [{{#job.uris}}{{.}}, {{/job.uris}}"--"]}', context))
    assert as_args == {"args": ["http://a/x.tgz", "http://b/y.tgz", "--"]}
