"""Hints from what a failure looks like (pure)."""
from __future__ import annotations

import pytest

from tfmesos.core.placement.fit import no_offer_hint
from tfmesos.core.tensorflow.hints import failure_hints, missing_program_hint, script_not_found_hint


@pytest.mark.parametrize("output", [
    "Traceback (most recent call last):\n  File \"train.py\", line 1\nModuleNotFoundError: No module named 'tensorflow'",
    "sh: 1: python: not found",
    "bash: line 1: tfserver: command not found",
])
def test_a_missing_program_or_module_gets_the_python_hint(output):
    hint = missing_program_hint(output)
    assert "$TFMESOS_PYTHON" in hint and "job.python" in hint


@pytest.mark.parametrize("output", ["", "loss 0.3\nValueError: shapes (2,) and (3,) not aligned",
                                    "checkpoint not found, training from scratch\nValueError: x", "FileNotFoundError: [Errno 2] No such file"])
def test_other_failures_get_no_hint(output):
    assert missing_program_hint(output) == ""


def test_no_offer_explains_the_gpu_rule_only_to_a_cpu_job():
    assert "GPU_RESOURCES" in no_offer_hint(gpus_needed=False)
    assert "GPU" not in no_offer_hint(gpus_needed=True)
    assert no_offer_hint(True).startswith("no offer was received")


def _waiting_notes(job):
    return [e for e in job.events if e.startswith("still waiting after")]


def test_a_job_without_any_offer_is_told_why_early_and_once():
    from tfmesos.core.job.gang import NO_OFFER_NOTE_SECONDS
    from tfmesos.core.job.job import Job

    from tests.core.helpers import offer, spec_of

    job = Job.new(spec_of(worker={"count": 1}), now=0.0)
    job.start()
    job.tick(NO_OFFER_NOTE_SECONDS - 1)
    assert _waiting_notes(job) == []
    job.tick(NO_OFFER_NOTE_SECONDS)
    job.tick(NO_OFFER_NOTE_SECONDS + 10)
    (note,) = _waiting_notes(job)
    assert "GPU_RESOURCES" in note
    assert job.phase == "PLACING"  # a note, not an end: the placement timeout still decides

    seen = Job.new(spec_of(worker={"count": 1, "cpus": 100}), now=0.0)
    seen.start()
    seen.offers([offer(1)], 1.0)  # an offer too small: the hint about no offer at all does not apply
    seen.tick(NO_OFFER_NOTE_SECONDS + 1)
    assert _waiting_notes(seen) == []


SANDBOX = ("/tmp/tfmesos-localmaster-90kse23f/agents/4b01-S0/frameworks/4b01-0000/executors/no-file.worker.0.1/"
           "runs/af7b49f6-2cf6-427f-8585-4e5e5e6b5d9d")


def test_a_script_not_in_the_sandbox_gets_where_the_command_ran_and_what_to_set():
    # As Python wrote it on the embedded master, for "$TFMESOS_PYTHON train.py" without job.workdir.
    output = f"/opt/venv/bin/python3: can't open file '{SANDBOX}/train.py': [Errno 2] No such file or directory"
    (hint,) = failure_hints(output)
    assert hint.startswith(f"the command ran in {SANDBOX}, the task's sandbox, which holds no train.py")
    assert "job.workdir" in hint and "job.uris" in hint


def test_a_script_missing_from_a_workdir_names_that_folder():
    (hint,) = failure_hints("python3: can't open file '/data/jobs/train.py': [Errno 2] No such file or directory")
    assert hint.startswith("the command ran in /data/jobs, where train.py is not")


def test_a_failure_that_is_no_missing_script_gets_no_such_hint():
    assert script_not_found_hint("ValueError: x\\nFileNotFoundError: [Errno 2] No such file: 'data.csv'") == ""
