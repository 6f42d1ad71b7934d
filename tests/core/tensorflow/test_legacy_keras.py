"""Which Keras a task's tf.keras is: TF_USE_LEGACY_KERAS=1 by default, the job's own value wins,
and a TensorFlow without the matching tf-keras is said in one line naming the fix."""
from __future__ import annotations

import pytest

from tfmesos.core.tensorflow.legacy_keras import keras_problem, with_legacy_keras
from tfmesos.options.jobspec import job_spec_from_options
from tfmesos.options.load import resolve_options

pytestmark = pytest.mark.unit


def _task_env(job: dict, role_env: list[str] | None = None) -> dict[str, str]:
    options = resolve_options({"job": {"command": "x", **job},
                               "roles": {"worker": {"count": 1, "env": role_env or []}}})
    spec = job_spec_from_options(options)
    return dict(spec.env) | dict(spec.roles[0].env)  # what tfmesos.mesos.taskinfo gives the task


def test_tasks_get_legacy_keras_by_default():
    assert _task_env({})["TF_USE_LEGACY_KERAS"] == "1"


def test_the_option_false_leaves_tensorflows_default():
    assert "TF_USE_LEGACY_KERAS" not in _task_env({"legacy_keras": False})


def test_job_env_and_role_env_win_over_the_default():
    assert _task_env({"env": ["TF_USE_LEGACY_KERAS=0"]})["TF_USE_LEGACY_KERAS"] == "0"
    assert _task_env({}, role_env=["TF_USE_LEGACY_KERAS=0"])["TF_USE_LEGACY_KERAS"] == "0"


def test_the_jobs_own_value_is_not_a_second_variable():
    # preflight refuses a variable given twice in job.env: the default must not add one.
    env = with_legacy_keras((("TF_USE_LEGACY_KERAS", "0"), ("A", "1")), True)
    assert env == (("TF_USE_LEGACY_KERAS", "0"), ("A", "1"))


LEGACY = {"TF_USE_LEGACY_KERAS": "1"}


def test_keras_3_without_tf_keras_is_said_naming_the_matching_pip_command():
    line = keras_problem(LEGACY, "2.21.0", None, "/venv/bin/python")
    assert line is not None and "\n" not in line
    assert "/venv/bin/python -m pip install --no-deps 'tf-keras==2.21.*'" in line
    assert "MultiWorkerMirroredStrategy" in line and "job.legacy_keras" in line


def test_a_tf_keras_of_another_release_is_said():
    line = keras_problem(LEGACY, "2.16.2", "2.21.0", "python3")
    assert line and "'tf-keras==2.16.*'" in line and "2.21.0" in line


@pytest.mark.parametrize("env, tensorflow, tf_keras", [
    (LEGACY, "2.21.0", "2.21.0"),  # the matching release
    (LEGACY, "2.15.1", None),  # tf.keras is Keras 2 before 2.16
    (LEGACY, None, None),  # no TensorFlow: nothing to say about Keras
    ({}, "2.21.0", None),  # the job chose Keras 3 (job.legacy_keras false)
    ({"TF_USE_LEGACY_KERAS": "0"}, "2.21.0", None),
    (LEGACY, "2.21.0rc1", "2.21.0rc0"),
])
def test_nothing_is_said_when_keras_is_usable_or_chosen(env, tensorflow, tf_keras):
    assert keras_problem(env, tensorflow, tf_keras, "python3") is None


def test_the_installed_versions_are_read_from_the_dist_info_folders(tmp_path):
    from tfmesos.task.keras_check import installed

    (tmp_path / "tensorflow_cpu-2.16.2.dist-info").mkdir()
    (tmp_path / "keras-3.15.1.dist-info").mkdir()
    assert installed([str(tmp_path), str(tmp_path / "absent")]) == ("2.16.2", None)
    (tmp_path / "tf_keras-2.16.0.dist-info").mkdir()
    assert installed([str(tmp_path)]) == ("2.16.2", "2.16.0")
