"""The job's record and its transient state: what is persisted is the record, whole."""
from dataclasses import fields

from tfmesos.core.job.codec import to_dict
from tfmesos.core.task_state import LIVE, PENDING
from tfmesos.core.state.record import JobState, Transient, job_seed, task_names
from tfmesos.core.state.tasks import TaskRecord
from tfmesos.core.spec import TaskKey

from tests.core.helpers import spec_of, state_of


def test_the_record_holds_exactly_what_is_persisted_and_the_transient_state_none_of_it():
    job, tr = state_of(spec_of(worker={"count": 1}))
    written = set(to_dict(job, tr))
    record = {f.name for f in fields(JobState)}
    # The spec comes from the options, the task ids are written as "task_ids", the ClusterSpec's
    # version as "spec_version" (its name before "spec" meant the JobSpec only); "suppressed" is
    # written (transient, a loaded job asks for offers again) for the record's readers.
    assert written == (record - {"spec", "by_task_id", "cluster_spec_version"}) | {"task_ids", "spec_version", "suppressed"}
    assert not record & {f.name for f in fields(Transient)}


def test_a_task_is_live_from_staging_until_it_ends_and_has_an_endpoint_once_placed():
    rec = TaskRecord(TaskKey("worker", 0))
    assert rec.state == PENDING and not rec.live and rec.endpoint == ""
    rec.state, rec.hostname, rec.port = "TASK_STAGING", "h1", 31000
    assert rec.live and rec.endpoint == "h1:31000"
    assert all(TaskRecord(rec.key, state=s).live for s in LIVE)
    assert not TaskRecord(rec.key, state="TASK_FINISHED").live


def test_the_jitter_seed_is_the_same_in_every_process_and_differs_between_names():
    assert job_seed("mnist") == 43886, "crc32, not hash(): str hashes are salted per process"
    assert job_seed("mnist") != job_seed("mnist2")


def test_task_names_names_the_first_few_and_counts_the_rest():
    keys = [TaskKey("worker", i) for i in range(10)]
    assert task_names(keys[:2]) == "one of worker:0, worker:1"
    assert task_names(keys, shown=3) == "one of worker:0, worker:1, worker:2 and 7 more"
    assert task_names([]) == "none (the job has no task)"

