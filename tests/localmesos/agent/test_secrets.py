"""Secrets as a Mesos 1.12 master validates them and an agent with the default secret resolver
treats them (messages from src/common/validation.cpp and src/secret/resolver.cpp; the launch
failure of a reference and the VALUE secret in the environment measured on a real agent)."""
from __future__ import annotations

import base64

from tests.localmesos.scheduler_client import RawScheduler, command_task, framework_info, launch

VALUE = "s3cr3t-ZQ41"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _env(**variables: dict) -> dict:
    return {"variables": [{"name": name, **variable} for name, variable in variables.items()]}


def _collect(scheduler: RawScheduler, count: int, terminal: bool = True) -> dict[str, dict]:
    found: dict[str, dict] = {}
    while len(found) < count:
        status = scheduler.next_update(timeout=30)
        if not terminal or status["state"] not in ("TASK_STAGING", "TASK_STARTING", "TASK_RUNNING"):
            found[status["task_id"]["value"]] = status
    return found


def _subscribed(master, name: str) -> tuple[RawScheduler, dict, str]:
    """A raw scheduler subscribed to ``master``, its first offer and that offer's agent."""
    scheduler = RawScheduler(master.address)
    scheduler.subscribe(framework_info(name))
    offer = scheduler.next_offers()[0]
    return scheduler, offer, offer["agent_id"]["value"]


def test_invalid_secrets_are_refused_with_mesos_messages(make_master) -> None:
    scheduler, offer, agent = _subscribed(make_master(), "secrets-validation")
    reference = {"type": "REFERENCE", "reference": {"name": "team/key"}}
    cases = {
        "ref-with-value": _env(S={"type": "SECRET", "secret": {**reference, "value": {"data": _b64(VALUE)}}}),
        "ref-without-name": _env(S={"type": "SECRET", "secret": {"type": "REFERENCE"}}),
        "value-without-value": _env(S={"type": "SECRET", "secret": {"type": "VALUE"}}),
        "value-with-ref": _env(S={"type": "SECRET", "secret": {"type": "VALUE", "value": {"data": _b64("x")},
                                                               "reference": {"name": "n"}}}),
        "nul": _env(S={"type": "SECRET", "secret": {"type": "VALUE", "value": {"data": _b64("a\0b")}}}),
    }
    tasks = []
    for task_id, environment in cases.items():
        task = command_task(task_id, agent, "true")
        task["command"]["environment"] = environment
        tasks.append(task)
    volume = command_task("volume-without-secret", agent, "true")
    volume["container"] = {"type": "MESOS", "volumes": [{"container_path": "f", "mode": "RO",
                                                         "source": {"type": "SECRET"}}]}
    tasks.append(volume)
    assert launch(scheduler, offer, tasks, refuse_seconds=0).status == 202
    errors = {task_id: status["message"] for task_id, status in _collect(scheduler, len(tasks), False).items()}
    prefix = "Task's `CommandInfo` is invalid: Environment variable 'S' "
    assert errors == {
        "ref-with-value": prefix + "specifies an invalid secret: Secret 'team/key' of type REFERENCE must not "
                                   "have the 'value' field set",
        "ref-without-name": prefix + "specifies an invalid secret: Secret of type REFERENCE must have the "
                                     "'reference' field set",
        "value-without-value": prefix + "specifies an invalid secret: Secret of type VALUE must have the 'value' "
                                        "field set",
        "value-with-ref": prefix + "specifies an invalid secret: Secret of type VALUE must not have the "
                                   "'reference' field set",
        "nul": prefix + "specifies a secret containing null bytes, which is not allowed in the environment",
        "volume-without-secret": "Task's `ContainerInfo` is invalid: Invalid volume: 'source.secret' is not set "
                                 "for SECRET volume",
    }
    scheduler.teardown()
    scheduler.close()


def test_value_secrets_reach_the_container_and_references_fail_its_launch(make_master) -> None:
    master = make_master()
    scheduler, offer, agent = _subscribed(master, "secrets-agent")
    value = {"type": "VALUE", "value": {"data": _b64(VALUE)}}
    # The task proves it read both without printing them: its exit code says.
    reads = command_task("reads", agent, f'test "$S" = {VALUE} && test "$(cat keys/k)" = {VALUE} '
                                         '&& test "$(stat -c %a keys/k)" = 444')
    reads["command"]["environment"] = _env(S={"type": "SECRET", "secret": value})
    reads["container"] = {"type": "MESOS", "volumes": [{"container_path": "keys/k", "mode": "RO",
                                                        "source": {"type": "SECRET", "secret": value}}]}
    by_reference = command_task("reference", agent, "true")
    by_reference["command"]["environment"] = _env(
        S={"type": "SECRET", "secret": {"type": "REFERENCE", "reference": {"name": "team/key"}}})
    assert launch(scheduler, offer, [reads, by_reference], refuse_seconds=0).status == 202
    ended = _collect(scheduler, 2)
    assert ended["reads"]["state"] == "TASK_FINISHED", ended["reads"]
    # Where the agent keeps the TaskInfo (and a framework's secrets with it), no one else reads.
    import stat

    sandbox = next(master.work_dir.rglob("executors/reads/runs/latest")).resolve()
    assert stat.S_IMODE(sandbox.stat().st_mode) == 0o750  # as Mesos makes it
    checkpoints = [p for p in (master.work_dir / "meta").rglob("*") if p.is_file()]
    assert checkpoints and {stat.S_IMODE(p.stat().st_mode) for p in checkpoints} == {0o600}
    assert (ended["reference"]["state"], ended["reference"]["reason"], ended["reference"]["message"]) == (
        "TASK_FAILED", "REASON_CONTAINER_LAUNCH_FAILED",
        "Failed to launch container: Collect failed: Default secret resolver cannot resolve references")
    scheduler.teardown()
    scheduler.close()


def test_a_secret_that_is_not_base64_refuses_the_call_as_protobuf_parsing_does(make_master) -> None:
    scheduler, offer, agent = _subscribed(make_master(), "secrets-parse")
    volume = {"container_path": "k", "mode": "RO", "source": {"type": "SECRET", "secret": {
        "type": "VALUE", "value": {"data": "not-base64"}}}}
    for where in ("command", "container"):
        task = command_task(where, agent, "true")
        if where == "command":
            task["command"]["environment"] = _env(S={"type": "SECRET", "secret": volume["source"]["secret"]})
        else:
            task["container"] = {"type": "MESOS", "volumes": [volume]}
        reply = launch(scheduler, offer, [task])
        assert (reply.status, reply.body) == (400, "Failed to convert JSON into Call protobuf: Failed to base64 "
                                                   "decode bytes field 'data': Invalid character '-'")
    scheduler.teardown()
    scheduler.close()
