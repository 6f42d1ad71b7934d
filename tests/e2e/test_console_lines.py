"""`tfmesos run`'s console on real jobs (issue 32): a failure's cause is said once (the summary),
a success names what the success rule counted, and the summary is the last thing printed."""
from __future__ import annotations

import re

from tests.e2e.harness import run_scheduler, stop_scheduler, write_options


def _run(tmp_path, name: str, **overrides) -> tuple[int, list[str]]:
    options = write_options(tmp_path / f"{name}.json", service={"name": name}, **overrides)
    run = run_scheduler(options, "--api-port", "0", "--state-dir", str(tmp_path / "state"))
    try:
        code = run.wait(120)
    finally:
        stop_scheduler(run)
    return code, run.output.splitlines()


def test_a_failure_is_one_line_and_the_summary_comes_last(tmp_path):
    code, lines = _run(tmp_path, "one-failure", job={"command": "echo started {job_name}; sleep 1; "
                                                                "if [ {job_name} = worker ]; then exit 3; fi; sleep 60"},
                       roles={"chief": {"count": 1, "cpus": 0.1, "mem": 64}, "worker": {"count": 1, "cpus": 0.1, "mem": 64}})
    assert code == 1, lines[-20:]
    cause = "worker:0 (one-failure.worker.0.2) ended TASK_FAILED, exit code 3"
    said = [line for line in lines if cause in line]
    assert len(said) == 1 and re.search(r"\] job one-failure FAILED: ", said[0]), said
    summary = lines.index(said[0])
    assert all(re.search(r"\]   \w+:\d+ +\S+ +TASK_|\] last lines of |\]   \| ", line) for line in lines[summary + 1:]), \
        lines[summary:]


def test_all_workers_success_says_all_workers(tmp_path):
    code, lines = _run(tmp_path, "all-workers", job={"command": "echo done"}, policies={"success": "all_workers"},
                       roles={"worker": {"count": 2, "cpus": 0.1, "mem": 64}})
    assert code == 0, lines[-20:]
    assert [line for line in lines if "SUCCEEDED" in line or "succeeded" in line] == \
        [next(line for line in lines if line.endswith("] job all-workers SUCCEEDED: all 2 workers finished"))], lines
