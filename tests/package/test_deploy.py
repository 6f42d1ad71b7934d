"""`tfmesos deploy` / `undeploy` against loopback stand-ins for Marathon and the scheduler."""
import argparse
import json

import pytest

from tfmesos.core.status import VERSION
from tfmesos.package.cli import add_subcommands
from tfmesos.package.deploy import DeployError, Undeploy, deploy

from tests.package.fixtures import FULL_OPTIONS
from tests.package.helpers import render
from tests.package.standins import Marathon, Scheduler


@pytest.fixture
def cluster():
    log: list[str] = []
    scheduler = Scheduler(log)
    marathon = Marathon(log, ("127.0.0.1", scheduler.port))
    yield marathon, scheduler, log
    marathon.close()
    scheduler.close()


def cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="tfmesos")
    add_subcommands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    return args.func(args)


def quick(**kw) -> Undeploy:
    return Undeploy(poll_interval=0, timeout=5, say=lambda line: None, **kw)


def test_deploy_posts_the_rendered_app_unchanged(cluster, tmp_path, capsys):
    marathon, _, log = cluster
    options = tmp_path / "options.json"
    options.write_text(json.dumps(FULL_OPTIONS))
    assert cli("deploy", str(options), "--marathon", f"http://127.0.0.1:{marathon.port}") == 0
    assert "deployed /team-a/mnist" in capsys.readouterr().out
    assert log == ["marathon POST /v2/apps"]
    [body] = marathon.posted
    # The marathon library adds its Docker defaults; everything else arrives exactly as rendered.
    docker = body["container"]["docker"]
    assert (docker.pop("privileged"), docker.pop("forcePullImage")) == (False, False)
    assert body == render(FULL_OPTIONS)


def test_deploying_twice_is_a_clear_error(cluster):
    marathon, _, _ = cluster
    app = render(FULL_OPTIONS)
    url = f"http://127.0.0.1:{marathon.port}"
    deploy(app, url)
    with pytest.raises(DeployError, match=r"already has /team-a/mnist: undeploy it first"):
        deploy(app, url)


def test_undeploy_shuts_the_scheduler_down_then_removes_the_app(cluster):
    marathon, scheduler, log = cluster
    url = f"http://127.0.0.1:{marathon.port}"
    deploy(render(FULL_OPTIONS), url)
    log.clear()
    quick().run("team-a/mnist", url)
    assert "/team-a/mnist" not in marathon.apps
    assert log == [
        "marathon GET /v2/apps/team-a/mnist/tasks",
        "scheduler POST /v1/shutdown",
        "scheduler GET /v1/status",  # FINISHING
        "scheduler GET /v1/status",  # KILLED: the job's tasks are killed
        "marathon DELETE /v2/apps/team-a/mnist",
        "marathon GET /v2/apps/team-a/mnist",  # still there while Marathon deploys the removal
        "marathon GET /v2/apps/team-a/mnist",
        "marathon GET /v2/apps/team-a/mnist",  # 404: gone
    ]


def test_undeploy_keeps_the_app_when_the_scheduler_cannot_be_reached(cluster):
    marathon, scheduler, log = cluster
    url = f"http://127.0.0.1:{marathon.port}"
    deploy(render(FULL_OPTIONS), url)
    scheduler.close()
    with pytest.raises(DeployError, match=r"cannot reach the scheduler at 127\.0\.0\.1:\d+.*--force"):
        quick().run("team-a/mnist", url)
    assert "/team-a/mnist" in marathon.apps
    quick(force=True).run("team-a/mnist", url)
    assert "/team-a/mnist" not in marathon.apps


def test_undeploy_does_not_misread_a_newer_schedulers_status(cluster):
    marathon, scheduler, _ = cluster
    url = f"http://127.0.0.1:{marathon.port}"
    deploy(render(FULL_OPTIONS), url)
    scheduler.version = VERSION + 1
    with pytest.raises(DeployError, match=rf"serves status version {VERSION + 1}.*upgrade tfmesos.*--force"):
        quick().run("team-a/mnist", url)
    assert "/team-a/mnist" in marathon.apps
    scheduler.version = VERSION
    quick().run("team-a/mnist", url)
    assert "/team-a/mnist" not in marathon.apps


def test_undeploy_of_an_unknown_app_and_of_no_marathon(cluster, capsys):
    marathon, _, _ = cluster
    assert cli("undeploy", "nope", "--marathon", f"http://127.0.0.1:{marathon.port}") == 1
    assert "has no app /nope" in capsys.readouterr().err
    marathon.close()
    assert cli("undeploy", "nope", "--marathon", f"http://127.0.0.1:{marathon.port}") == 1
    assert "cannot reach Marathon at" in capsys.readouterr().err


def test_deploy_of_bad_options_names_the_field(cluster, tmp_path, capsys):
    marathon, _, log = cluster
    options = tmp_path / "options.json"
    options.write_text(json.dumps({"roles": {"worker": {"restart_policy": "Sometimes"}}}))
    assert cli("deploy", str(options), "--marathon", f"http://127.0.0.1:{marathon.port}") == 1
    assert '$.roles.worker.restart_policy: "Sometimes" is invalid: expected one of' in capsys.readouterr().err
    assert log == []


def test_undeploy_sends_the_api_token_the_job_requires(monkeypatch):
    """With service.api_token_secret the scheduler's API wants its token for POST /v1/shutdown (and,
    with api_token_reads, for the status): undeploy sends TFMESOS_API_TOKEN as tfmesos kill does."""
    from tfmesos.core.status import StatusSnapshot
    from tfmesos.scheduler.http_api import ApiServer, Operations

    phase = ["RUNNING"]
    api = ApiServer(lambda: StatusSnapshot(name="job", phase=phase[0]), lambda: None,
                    lambda: phase.__setitem__(0, "KILLED"), ops=Operations(token="s3cret", token_reads=True))
    api.start()
    try:
        monkeypatch.delenv("TFMESOS_API_TOKEN", raising=False)
        with pytest.raises(DeployError, match="wants the job's API token to shut down: set TFMESOS_API_TOKEN") as refused:
            quick()._shut_down(api.address)
        assert "s3cret" not in str(refused.value) and phase == ["RUNNING"]
        monkeypatch.setenv("TFMESOS_API_TOKEN", "s3cret")
        quick()._shut_down(api.address)
        assert phase == ["KILLED"], "shut down, and its end seen through the token-guarded status"
    finally:
        api.stop()
