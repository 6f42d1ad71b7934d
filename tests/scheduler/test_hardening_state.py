"""A state write that fails stops the job before anything that depends on it, says why, and
leaves no temporary file (a real failure: the state file's place is taken by a directory)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tfmesos.core.job.job import Job
from tfmesos.mesos.offers import parse_offer
from tfmesos.mesos.taskinfo import ExecutorSettings
from tfmesos.options.load import resolve_options
from tfmesos.scheduler.job_shell import Hooks, JobShell
from tfmesos.options.jobspec import job_spec_from_options
from tfmesos.store.job_store import JobStore
from tfmesos.store.state_store import DirStore


class RecordingDriver:
    """Records the calls the scheduler makes; a stand-in for pymesos' driver, which needs a master."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.framework_id = "F-1"

    def __getattr__(self, name: str):
        return lambda *args, **kwargs: self.calls.append(name)


def _broken_store(tmp_path: Path) -> DirStore:
    store = DirStore(tmp_path, "job")
    Path(store.where).mkdir()  # os.replace onto a directory fails: IsADirectoryError
    return store


def test_dir_store_failure_leaves_no_temporary_file(tmp_path: Path):
    store = _broken_store(tmp_path)
    with pytest.raises(OSError):
        store.save({"x": 1})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.json"]


def test_failed_persist_stops_before_any_launch(tmp_path: Path):
    options = resolve_options({"service": {"name": "job"}, "job": {"command": "true"}, "roles": {"worker": {"count": 1}}})
    spec = job_spec_from_options(options)
    events: list[str] = []
    sched = JobShell(Job.new(spec, 0.0), ExecutorSettings(python="python3"), JobStore(_broken_store(tmp_path), options),
                     hooks=Hooks(event=events.append))
    driver = RecordingDriver()
    sched.mesos.registered(driver, {"value": "F-1"}, {"hostname": "m", "port": 5050})
    offer = {"id": {"value": "O1"}, "agent_id": {"value": "A1"}, "hostname": "h1", "resources": [
        {"name": "cpus", "type": "SCALAR", "scalar": {"value": 4}},
        {"name": "mem", "type": "SCALAR", "scalar": {"value": 8192}},
        {"name": "ports", "type": "RANGES", "ranges": {"range": [{"begin": 31000, "end": 31010}]}}]}
    parse_offer(offer)  # a well-formed offer: what is refused below is the launch, not the offer
    sched.mesos.resourceOffers(driver, [offer])
    assert sched.done.is_set() and sched.persist_error is not None
    assert "cannot save the job's state" in sched.result.cause and str(tmp_path) in sched.result.cause
    assert "launchTasks" not in driver.calls, driver.calls
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.json"]


def test_persisted_state_holds_no_env_values(tmp_path: Path):
    options = resolve_options({"service": {"name": "job"}, "job": {"command": "true", "env": ["TOKEN=hunter2"]},
                               "roles": {"worker": {"count": 1, "env": ["PW=hunter3"]}}})
    spec = job_spec_from_options(options)
    store = DirStore(tmp_path, "job")
    sched = JobShell(Job.new(spec, 0.0), ExecutorSettings(python="python3"), JobStore(store, options))
    sched.mesos.registered(RecordingDriver(), {"value": "F-1"}, {"hostname": "m", "port": 5050})
    text = Path(store.where).read_text()
    assert "F-1" in text and "TOKEN=<hidden>" in text and "PW=<hidden>" in text
    assert "hunter2" not in text and "hunter3" not in text
