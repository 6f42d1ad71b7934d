"""The job record is one typed, versioned definition (store/format.py's JobRecord): what every
writer puts in a store, what every reader gets back, for the records of every format this
tfmesos reads (tests/data/state). And the typed job store over it (store/job_store.py): a job
resumes only with the options it ran with; a task's end is appended, not a rewrite."""
from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from tfmesos.core.job.job import Job
from tfmesos.errors import UsageError
from tfmesos.options.jobspec import job_spec_from_options
from tfmesos.options.load import OptionsError, load_options_file
from tfmesos.store import format as record_format
from tfmesos.store.format import FORMAT, JobRecord, StateFormatError, decode, end_of, record
from tfmesos.store.job_store import JOURNAL_MIN, JobStore, options_digest
from tfmesos.store.state_store import DirStore

DATA = Path(__file__).resolve().parents[1] / "data" / "state"
FIXTURES = ["format1-running.json", "format1-finished.json", "format2-running.json", "format3-running.json",
            "format4-finished.json", "format5-running.json"]


def _options() -> dict:
    return load_options_file(DATA / "fixture-options.json")


def test_the_record_is_its_dataclass_and_a_format_number() -> None:
    fields = {f.name for f in dataclasses.fields(JobRecord)}
    assert JobRecord.FORMAT == FORMAT
    assert set(record("F-1", "d", None, {})) == {"format"} | fields
    assert set(record("F-1", "d", None, {}, finished=True, end=end_of(1.0, None, {}, None, None))) == {"format"} | fields
    # A new format is a new upgrade step: every older one is read forward to today's.
    assert set(record_format._UPGRADES) == set(range(1, FORMAT))


@pytest.mark.parametrize("name", FIXTURES)
def test_every_older_record_reads_as_todays_typed_record(name: str) -> None:
    raw = (DATA / name).read_bytes()
    rec = JobRecord.from_json(raw)
    assert rec.to_json() == decode(raw) and rec.to_json()["format"] == FORMAT
    assert JobRecord.from_json(rec.to_json()) == rec
    assert isinstance(rec.job, dict) and isinstance(rec.finished, bool)


def test_a_newer_record_is_not_half_read() -> None:
    with pytest.raises(StateFormatError, match="format 99"):
        JobRecord.from_json((DATA / "format99-newer.json").read_bytes())


def test_the_store_writes_the_typed_record_and_reads_it_back(tmp_path: Path) -> None:
    options, spec = _options(), job_spec_from_options(_options())
    store = JobStore(DirStore(tmp_path, "fixture-job"), options)
    job = Job.from_dict(spec, decode((DATA / "format1-running.json").read_bytes())["job"])
    store.record(job, "F-9")
    saved = store.saved()
    assert saved == JobRecord("F-9", options_digest(options), saved.options, job.to_dict(), journal_gen=saved.journal_gen)
    on_disk = json.loads(Path(store.where).read_text())
    assert on_disk == saved.to_json()
    resumed, framework_id = store.resume(saved, spec, options)
    assert framework_id == "F-9" and resumed.to_dict() == job.to_dict()


def test_a_record_is_resumed_only_with_the_options_it_ran_with(tmp_path: Path) -> None:
    options, spec = _options(), job_spec_from_options(_options())
    store = DirStore(tmp_path, "fixture-job")
    shutil.copy(DATA / "format1-running.json", store.where)
    jobs = JobStore(store, options)
    saved = jobs.saved()
    assert saved is not None and jobs.resume(saved, spec, options)[1] == saved.framework_id
    other = json.loads(json.dumps(options))
    other["job"]["command"] = "sleep 31"
    with pytest.raises(OptionsError, match="with other options"):
        JobStore(store, other).resume(saved, spec, other)


def _updated(options: dict, env: list[str], workers: int) -> dict:
    new = json.loads(json.dumps(options))
    new["job"]["env"] = env
    new["roles"]["worker"]["count"] = workers
    return new


def test_an_updated_job_resumes_with_the_update_s_options_from_those_it_was_started_with(tmp_path: Path) -> None:
    options, spec = _options(), job_spec_from_options(_options())
    options["job"]["env"] = ["LR=0.1", "TOKEN=s3cret"]
    dirs = DirStore(tmp_path, "fixture-job")
    writer = JobStore(dirs, options)
    job = Job.new(spec, 0.0)
    writer.record(job, "F-1")
    new = _updated(options, ["LR=0.1", "TOKEN=s3cret"], 3)  # the same values: the record's names find them
    writer.updated(new)
    writer.record(job, "F-1")
    saved = writer.saved()
    assert saved.launched_digest == options_digest(options) and saved.options_digest == options_digest(new)
    assert "s3cret" not in Path(dirs.where).read_text(), "env values stay out of the state"
    # A failover started with the options of the first run, or with the update's: the update's.
    assert JobStore(dirs, options).options_to_resume(saved, options) == new
    assert JobStore(dirs, new).options_to_resume(saved, new) is new
    # Another job's options: given back, and resume refuses them as before.
    other = _updated(options, ["LR=0.1"], 5)
    assert JobStore(dirs, other).options_to_resume(saved, other) is other
    with pytest.raises(OptionsError, match="with other options"):
        JobStore(dirs, other).resume(saved, spec, other)


def test_an_update_s_new_env_values_are_kept_apart_for_a_failover_and_never_guessed(tmp_path: Path) -> None:
    options, spec = _options(), job_spec_from_options(_options())
    options["job"]["env"] = ["LR=0.1"]
    dirs = DirStore(tmp_path, "fixture-job")
    writer = JobStore(dirs, options)
    new = _updated(options, ["LR=0.0733"], 2)
    writer.updated(new)
    writer.record(Job.new(spec, 0.0), "F-1")
    saved = writer.saved()
    assert "0.0733" not in Path(dirs.where).read_text(), "env values stay out of the record"
    assert writer.env_kept and dirs.env_file.stat().st_mode & 0o777 == 0o600, "kept apart, this user's only"
    # A failover started with the first options resumes with the update's values.
    assert JobStore(dirs, options).options_to_resume(saved, options) == new
    # Not kept (lost, or ZooKeeper without TFMESOS_ZK_AUTH): never guessed from the first options.
    dirs.env_file.unlink()
    with pytest.raises(OptionsError, match=r"\$\.job\.env: .* expected the options given to that update"):
        JobStore(dirs, options).options_to_resume(saved, options)
    # Kept, then the record cleared (the job ended): they go with it.
    writer.updated(new)
    dirs.clear()
    assert not dirs.env_file.exists()


@pytest.mark.parametrize("content, why", [
    ("{cut short", "unreadable"),  # edited or cut short by hand: not JSON
    ((DATA / "format99-newer.json").read_text(), "format 99"),  # a newer tfmesos wrote it
])
def test_a_record_this_tfmesos_cannot_read_is_a_usage_error_that_says_where(tmp_path: Path, content: str,
                                                                           why: str) -> None:
    dirs = DirStore(tmp_path, "fixture-job")
    Path(dirs.where).write_text(content)
    with pytest.raises(UsageError, match=why) as caught:
        JobStore(dirs, _options()).saved()
    assert f"the job's state in {dirs.where}" in str(caught.value)
    assert caught.value.__suppress_context__  # one line: the parser's traceback stays out


def test_task_ends_are_appended_until_the_journal_is_as_long_as_the_job(tmp_path: Path) -> None:
    options, spec = _options(), job_spec_from_options(_options())
    dirs = DirStore(tmp_path, "fixture-job")
    store = JobStore(dirs, options)
    job = Job.from_dict(spec, decode((DATA / "format1-running.json").read_bytes())["job"])
    store.record(job, "F-1")
    whole = Path(dirs.where).read_bytes()
    key = next(iter(job.tasks))
    limit = max(JOURNAL_MIN, len(job.tasks))
    for _ in range(limit):
        store.record(job, "F-1", changed=key)
    assert Path(dirs.where).read_bytes() == whole and len(dirs.journal.read_bytes().splitlines()) == limit
    store.record(job, "F-1", changed=key)  # one more: the whole record again, a new generation
    assert not dirs.journal.exists() and JobRecord.from_json(Path(dirs.where).read_bytes()).journal_gen != \
        JobRecord.from_json(whole).journal_gen


def test_without_a_state_store_nothing_is_recorded_but_the_end_is_typed(tmp_path: Path) -> None:
    options, spec = _options(), job_spec_from_options(_options())
    store = JobStore(None, options)
    job = Job.new(spec, 0.0)
    store.record(job, "F-1")
    assert store.saved() is None and not store.persists
    end = end_of(5.0, None, {}, None, None)
    final = store.final(job, "F-1", end)
    assert final.finished and final.end == end and final.options_digest == options_digest(options)
    assert "hunter" not in json.dumps(final.to_json())


def test_a_whole_job_restart_is_written_whole_and_resumes_as_it_was(tmp_path: Path) -> None:
    """A collective worker's failure restarts the whole job: the other workers are killed for a
    relaunch. That event is about one task, but the journal's one-task entry would lose the others'
    change, and a scheduler resumed from it took their kills for failures (an audit)."""
    from tfmesos.core import actions as act
    from tfmesos.core.task_state import StatusUpdate, TaskState
    from tests.core.helpers import offer, spec_of

    spec = spec_of(worker={"count": 3, "restart_policy": "OnFailure", "max_restarts": 3})
    options = {"service": {"name": "collective"}, "roles": {"worker": {"count": 3}}}
    store = JobStore(DirStore(tmp_path, "collective"), options)
    job = Job.new(spec, 0.0)
    launched = [t for a in job.offers([offer(0, cpus=8, mem=16384)], 1.0) if isinstance(a, act.Launch) for t in a.tasks]
    store.record(job, "F-1")  # the task ids: a whole record
    for t in launched:
        job.status(StatusUpdate(t.task_id, TaskState.TASK_RUNNING, agent_id="S0"), 2.0)
    failed = launched[0]
    actions = job.status(StatusUpdate(failed.task_id, TaskState.TASK_FAILED, exit_code=1, agent_id="S0"), 3.0)
    assert len([a for a in actions if isinstance(a, act.Kill)]) == 2, "the peers are killed for the restart"
    store.record(job, "F-1", changed=failed.key)  # what the shell does for that event
    resumed = Job.from_dict(spec, store.saved().job)
    assert resumed.to_dict() == job.to_dict()
    assert all(resumed.tasks[t.key].relaunch_after_kill for t in launched[1:])
