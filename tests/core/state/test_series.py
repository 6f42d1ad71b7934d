"""The progress series the status page draws: bounded, evenly spread, ending at the last report."""
from __future__ import annotations

from tfmesos.core.state.series import MAX_POINTS, ProgressSeries


def test_a_long_run_stays_bounded_spread_over_the_whole_run_and_ends_at_its_last_report() -> None:
    series = ProgressSeries()
    reports = 10 * MAX_POINTS + 7
    for i in range(reports):
        assert series.add(1000.0 + i, {"step": i * 10, "loss": 1.0 / (i + 1)})
    points = series.to_list()
    assert len(points) <= MAX_POINTS + 1
    assert len(points) > MAX_POINTS // 2, "halving never leaves fewer than half"
    assert points[0] == [1000.0, 0.0, 1.0], "the start is kept"
    assert points[-1] == [1000.0 + reports - 1, (reports - 1) * 10.0, 1.0 / reports], "the newest report is kept"
    gaps = {round(b[0] - a[0]) for a, b in zip(points[:-2], points[1:-1])}
    assert len(gaps) == 1, f"kept points are evenly spaced, not bunched: {sorted(gaps)}"
    # Rates over downsampled stretches are the true mean rate: 10 steps per second throughout.
    assert {round((b[1] - a[1]) / (b[0] - a[0]), 6) for a, b in zip(points, points[1:])} == {10.0}


def test_reports_without_a_step_are_not_points_and_bad_numbers_are_dropped() -> None:
    series = ProgressSeries()
    assert not series.add(1.0, {"accuracy": 0.9})
    assert not series.add(1.0, {"step": None, "loss": 0.5})
    assert not series.add(1.0, {"step": True})
    assert series.add(2.0, {"step": 5, "loss": float("nan")})
    assert series.to_list() == [[2.0, 5.0, None]]


def test_a_series_survives_its_json_form_and_ignores_malformed_entries() -> None:
    series = ProgressSeries()
    for i in range(5):
        series.add(float(i), {"step": i, "loss": 0.1 * i})
    raw = series.to_list()
    assert ProgressSeries.from_list(raw).to_list() == raw
    assert ProgressSeries.from_list(raw + [["x", 1, 2], [1, 2], "junk"]).to_list() == raw
    assert ProgressSeries.from_list(None).to_list() == []


def test_the_job_keeps_the_series_of_the_task_that_decides_success_across_its_record() -> None:
    from tfmesos.core.job.job import Job
    from tfmesos.core.spec import TaskKey

    from tests.core.helpers import spec_of
    from tests.core.job.test_job import PSS, launch_all, run_all

    spec = spec_of(**PSS)
    job = Job.new(spec, 0.0)
    _, launched = launch_all(job)
    run_all(job, launched)
    chief, worker = launched[TaskKey("chief", 0)].task_id, launched[TaskKey("worker", 0)].task_id
    job.report(chief, {"step": 100, "loss": 0.5}, 2.0)
    job.report(worker, {"step": 999, "loss": 9.0}, 2.5)  # not the chief: not in the chart
    job.report(chief, {"step": 300, "accuracy": 0.9}, 4.0)  # no loss this time: the last one stands
    assert job.snapshot().to_json()["series"] == [[2.0, 100.0, 0.5], [4.0, 300.0, 0.5]]
    assert Job.from_dict(spec, job.to_dict()).state.series.to_list() == job.state.series.to_list()
    old = {k: v for k, v in job.to_dict().items() if k != "series"}  # a record from before format 4
    assert Job.from_dict(spec, old).state.series.to_list() == []
