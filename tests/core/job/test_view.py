"""Progress and the snapshot, alone (core/view.py)."""
from tfmesos.core.job import gang, view
from tfmesos.core.spec import TaskKey

from tests.core.helpers import offer, spec_of, state_of


def test_a_report_of_the_current_attempt_is_kept_and_the_lead_task_s_goes_in_the_series():
    job, tr = state_of(spec_of(chief={"count": 1}, worker={"count": 1}, ps={"count": 1}))
    gang.offers(job, tr, [offer(0, cpus=16, mem=65536)], 0.0)
    chief = job.tasks[TaskKey("chief", 0)]
    view.report(job, tr, chief.task_id, {"step": 50, "total_steps": 200, "loss": 0.5}, 3.0)
    view.report(job, tr, "t.chief.0.99", {"step": 99}, 4.0)  # not its attempt: ignored
    view.report(job, tr, job.tasks[TaskKey("worker", 0)].task_id, {"step": 7}, 5.0)
    assert view.progress(job, tr) == {"step": 50, "total_steps": 200, "loss": 0.5, "at": 3.0, "fraction": 0.25}
    assert job.series.to_list() == [[3.0, 50.0, 0.5]], "only the task that decides success is plotted"


def test_the_snapshot_lists_tasks_in_the_framework_s_role_order_with_their_progress():
    job, tr = state_of(spec_of(worker={"count": 1}, ps={"count": 1}, chief={"count": 1}))
    gang.offers(job, tr, [offer(0, cpus=16, mem=65536)], 0.0)
    view.report(job, tr, job.tasks[TaskKey("worker", 0)].task_id, {"step": 1}, 2.0)
    snap = view.snapshot(job, tr)
    assert [t.role for t in snap.tasks] == ["chief", "ps", "worker"], "TensorFlow's order, not the options'"
    assert next(t for t in snap.tasks if t.role == "worker").progress.step == 1
    assert snap.phase == "RUNNING" and snap.placement_wait == 0.0 and snap.tensorboard is None
