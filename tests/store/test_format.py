"""The persisted job record: records written by earlier versions load forever, newer ones are
refused plainly. The fixtures in tests/data/state: format1-* written by tfmesos 0.1.0, format2-running
by the release before the journal (format 3), format3-running (with its journal) by the release before
the kept end (format 4), format4-finished (a kept end) by the release before the recorded Marathon
deployment (format 5), format5-running by the release before ``tfmesos update`` recorded the digest
of the options a job was started with (format 6)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tfmesos.core.job.job import Job
from tfmesos.options.load import load_options_file
from tfmesos.store.job_store import options_digest, resumable_with
from tfmesos.options.jobspec import job_spec_from_options
from tfmesos.store.format import FORMAT, StateFormatError, decode, record
from tfmesos.store.state_store import DirStore

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "state"


def _fixture(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def _spec():
    return job_spec_from_options(load_options_file(DATA / "fixture-options.json"))


def test_a_running_job_of_format_1_loads_and_resumes_with_its_task_ids() -> None:
    old = _fixture("format1-running.json")
    saved = decode(old)
    assert saved["format"] == FORMAT and saved["finished"] is False
    assert saved["framework_id"] == old["framework_id"] and saved["options_digest"] == old["options_digest"]
    job = Job.from_dict(_spec(), saved["job"])
    assert job.phase == "RUNNING"
    assert {r.task_id for r in job.tasks.values()} == set(old["job"]["task_ids"])
    assert sorted(r.state for r in job.tasks.values()) == sorted(t["state"] for t in old["job"]["tasks"])


def test_a_running_job_of_format_2_loads_with_an_empty_journal(tmp_path: Path) -> None:
    old = _fixture("format2-running.json")
    store = DirStore(tmp_path, "fixture-job")
    shutil.copy(DATA / "format2-running.json", store.where)
    saved = store.load()
    assert saved["format"] == FORMAT and saved["journal_gen"] == 0 and saved["end"] is None
    assert saved["deployment"] is None
    assert saved["launched_digest"] is None
    assert {k: v for k, v in saved.items() if k not in ("format", "journal_gen", "end", "deployment", "launched_digest")} == \
        {k: v for k, v in old.items() if k != "format"}
    assert Job.from_dict(_spec(), saved["job"]).phase == "RUNNING"


def test_a_running_job_of_format_3_loads_with_its_journal_replayed_and_no_end(tmp_path: Path) -> None:
    store = DirStore(tmp_path, "fixture-job")
    shutil.copy(DATA / "format3-running.json", store.where)
    shutil.copy(DATA / "format3-running.journal", store.journal)
    saved = store.load()
    assert saved["format"] == FORMAT and saved["end"] is None
    assert saved["job"]["tasks"][0]["state"] == "TASK_RUNNING", "its generation's entry, not the stale one"
    assert saved["job"]["events"][-1] == "ps:0 TASK_RUNNING" and "stale" not in saved["job"]["events"]
    job = Job.from_dict(_spec(), saved["job"])
    assert job.phase == "RUNNING" and job.state.series.to_list() == []


def test_a_finished_job_of_format_4_loads_with_its_end_and_no_deployment() -> None:
    old = _fixture("format4-finished.json")
    saved = decode(old)
    assert saved["format"] == FORMAT and saved["deployment"] is None
    assert {k: v for k, v in saved.items() if k not in ("format", "deployment", "launched_digest")} == \
        {k: v for k, v in old.items() if k != "format"}
    assert saved["finished"] is True and saved["end"]["logs"]
    assert Job.from_dict(_spec(), saved["job"]).snapshot().phase == "SUCCEEDED"


def test_a_running_job_of_format_5_loads_as_never_updated() -> None:
    old = _fixture("format5-running.json")
    saved = decode(old)
    assert saved["format"] == FORMAT and saved["launched_digest"] is None
    assert {k: v for k, v in saved.items() if k not in ("format", "launched_digest")} == \
        {k: v for k, v in old.items() if k != "format"}
    assert Job.from_dict(_spec(), saved["job"]).phase == "RUNNING"


def test_a_finished_job_of_format_1_loads_as_finished() -> None:
    saved = decode(_fixture("format1-finished.json"))
    assert saved["finished"] is True and saved["framework_id"] is None
    assert Job.from_dict(_spec(), saved["job"]).snapshot().phase == "SUCCEEDED"


def test_a_newer_format_is_refused_naming_both_formats() -> None:
    with pytest.raises(StateFormatError, match=rf"format 99, newer than this tfmesos reads \(format {FORMAT}\)"):
        decode(_fixture("format99-newer.json"))


@pytest.mark.parametrize("raw", [[], {"format": 1}, {"format": "2", "job": {}}, {"format": 0, "job": {}}])
def test_what_is_not_a_record_is_refused(raw) -> None:
    with pytest.raises(StateFormatError):
        decode(raw)


@pytest.mark.parametrize("name", ["format1-running.json", "format1-finished.json"])
def test_a_store_holding_a_format_1_file_loads_it_upgraded(tmp_path: Path, name: str) -> None:
    store = DirStore(tmp_path, "fixture-job")
    shutil.copy(DATA / name, store.where)  # the bytes 0.1.0 wrote, not a re-encoding of them
    assert store.load() == decode(_fixture(name)) and store.load()["format"] == FORMAT


def test_running_and_finished_records_have_one_shape_and_round_trip(tmp_path: Path) -> None:
    store = DirStore(tmp_path, "fixture-job")
    job = Job.from_dict(_spec(), decode(_fixture("format1-running.json"))["job"])
    running = record("fw-1", "d1", {"service": {}}, job.to_dict())
    finished = record("fw-1", "d1", {"service": {}}, job.to_dict(), finished=True)
    assert set(running) == set(finished)
    store.save(finished)
    assert store.load() == finished


def test_tfmesos_run_refuses_a_newer_record_before_anything_runs(tmp_path: Path) -> None:
    options = tmp_path / "o.json"
    shutil.copy(DATA / "fixture-options.json", options)
    (tmp_path / "state").mkdir()
    shutil.copy(DATA / "format99-newer.json", tmp_path / "state" / "fixture-job.json")
    run = subprocess.run([sys.executable, "-m", "tfmesos.client.cli", "run", str(options), "--state-dir", str(tmp_path / "state")],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert run.returncode == 2, run.stderr
    assert f"format 99, newer than this tfmesos reads (format {FORMAT})" in run.stderr
    assert "Traceback" not in run.stderr and "launch" not in run.stdout


def test_a_format_1_record_resumes_with_its_options_though_the_schema_grew_since() -> None:
    # Options were added since 0.1.0 wrote it (their defaults changed its whole-document digest).
    saved = decode(_fixture("format1-running.json"))
    options = load_options_file(DATA / "fixture-options.json")
    assert resumable_with(saved, options)
    other = load_options_file(DATA / "fixture-options.json") | {}
    other["roles"]["worker"]["count"] = 2
    assert not resumable_with(saved, other)


def test_todays_digest_ignores_defaults_so_an_added_option_keeps_a_job_resumable() -> None:
    options = load_options_file(DATA / "fixture-options.json")
    saved = record("fw", options_digest(options), None, {})
    older = json.loads(json.dumps(options))
    del older["service"]["api_token_reads"]  # as a tfmesos without that option resolved them
    assert options_digest(older) == options_digest(options)
    explicit = json.loads(json.dumps(options))
    explicit["job"]["command"] = "sleep 31"
    assert not resumable_with(saved, explicit)
