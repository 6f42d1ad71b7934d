"""``tfmesos run``, ``tfrun`` and ``tfmesos.cluster()`` are front-ends of one ``Session``
(tfmesos/scheduler/session.py): each goes through it, and none of them starts a part of a running
job (master, scheduler, API, driver) by itself."""
from __future__ import annotations

import ast
import io
from pathlib import Path
from typing import Any

import pytest

from tfmesos.client import cluster as cluster_api, tfrun
from tfmesos.options.jobspec import job_spec_from_options
from tfmesos.options.load import resolve_options
from tfmesos.scheduler import runner, session
from tfmesos.scheduler.run_settings import SessionKind

ROOT = Path(__file__).resolve().parents[2]
FRONT_ENDS = ("tfmesos/scheduler/runner.py", "tfmesos/client/cluster.py", "tfmesos/client/tfrun.py")
# What starting a job's parts takes: only the session (and the modules it calls) may name these.
START_UP = {
    "MesosSchedulerDriver", "SchedulerDriver", "load", "framework_info", "await_subscription", "stop_driver",
    "JobShell", "JobScheduler", "JobStore", "ApiServer", "Operations", "announce", "open_store",
    "start_embedded_master", "ChildMaster", "LocalMaster", "check_master", "check_state_dir", "record_end",
    "refuse_duplicate", "role_quota", "cluster_state", "ExecutorSettings",
}


class Opened(Exception):
    """Session.open was reached."""


def _names(path: str) -> set[str]:
    tree = ast.parse((ROOT / path).read_text())
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    names |= {a.asname or a.name.rsplit(".", 1)[-1] for n in ast.walk(tree)
              if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    return names


@pytest.mark.parametrize("path", FRONT_ENDS)
def test_no_front_end_starts_a_part_of_the_job_itself(path: str) -> None:
    assert not _names(path) & START_UP, f"{path} starts what the Session starts: {sorted(_names(path) & START_UP)}"


def test_the_session_starts_every_part() -> None:
    names = _names("tfmesos/scheduler/session.py")
    for needed in ("SchedulerDriver", "load", "framework_info", "await_subscription", "stop_driver", "start_embedded_master",
                   "check_master", "announce", "record_end", "JobShell"):
        assert needed in names, needed


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[session.Session]:
    """Session.open raises Opened: whoever reaches it went through the Session."""
    seen: list[session.Session] = []

    def open_(self: session.Session) -> session.Session:
        seen.append(self)
        raise Opened

    monkeypatch.setattr(session.Session, "open", open_)
    return seen


def _tiny() -> tuple[dict, Any]:
    options = resolve_options({"service": {"name": "front-end"}, "job": {"command": "true"},
                               "roles": {"chief": {"count": 1, "cpus": 0.1, "mem": 64}}})
    return options, job_spec_from_options(options)


def test_tfmesos_run_goes_through_the_session(opened: list[session.Session]) -> None:
    options, spec = _tiny()
    with pytest.raises(Opened):
        runner.run_job(spec, options, runner.RunSettings(), out=io.StringIO())
    assert len(opened) == 1 and opened[0].kind == SessionKind()


def test_cluster_goes_through_the_session_with_its_own_kind(opened: list[session.Session]) -> None:
    with pytest.raises(Opened):
        with cluster_api.cluster({"ps": 1}, coordinator=True):
            pass
    assert len(opened) == 1
    kind = opened[0].kind
    assert (kind.persist, kind.restart, kind.failover) == (False, False, False)


def test_tfrun_goes_through_the_session(opened: list[session.Session]) -> None:
    with pytest.raises(Opened):
        tfrun.main(["-w", "1", "-s", "1", "--", "true"])
    assert len(opened) == 1 and opened[0].kind.persist is False


def test_the_driver_is_tfmesos_own_unless_the_flag_or_the_variable_names_pymesos() -> None:
    from tfmesos.errors import UsageError

    assert session.driver_choice("", "") == session.driver_choice("", "  ") == "own"
    assert session.driver_choice("", "pymesos") == "pymesos"
    assert session.driver_choice("own", "pymesos") == "own"  # the flag wins
    with pytest.raises(UsageError) as bad:
        session.driver_choice("", "mesos")
    assert str(bad.value) == "TFMESOS_DRIVER: 'mesos' is no driver; expected one of own, pymesos"
