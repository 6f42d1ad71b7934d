"""Keras for the distribution strategies: which Keras a task's ``tf.keras`` is, and what is missing.

Keras 3 (``tf.keras`` from TensorFlow 2.16 on) cannot run ``model.fit`` under
MultiWorkerMirroredStrategy (keras-team/keras#20585); tf-keras (Keras 2) can, and TensorFlow takes
it as ``tf.keras`` when TF_USE_LEGACY_KERAS=1. Tasks get that variable unless the job opts out
(``job.legacy_keras``) or sets it itself; these are the pure decisions, the probes are the
callers' (``tfmesos.scheduler.preflight``, the executor).
"""
from __future__ import annotations

LEGACY_KERAS_ENV = "TF_USE_LEGACY_KERAS"
FIRST_KERAS_3 = (2, 16)  # before this TensorFlow, tf.keras is Keras 2 and needs no tf-keras
_TRUE = ("1", "true", "yes")  # what TensorFlow reads as set

Env = tuple[tuple[str, str], ...]


def with_legacy_keras(job_env: Env, enabled: bool) -> Env:
    """The job's environment with TF_USE_LEGACY_KERAS=1 first, unless the job sets it itself."""
    if not enabled or any(key == LEGACY_KERAS_ENV for key, _ in job_env):
        return job_env
    return ((LEGACY_KERAS_ENV, "1"), *job_env)


def _major_minor(version: str) -> tuple[int, int] | None:
    parts = version.split(".")
    try:
        return int(parts[0]), int("".join(c for c in parts[1] if c.isdigit()) or "x")
    except (IndexError, ValueError):
        return None


def keras_problem(env: dict[str, str], tensorflow: str | None, tf_keras: str | None, python: str) -> str | None:
    """One line when ``python``'s TensorFlow has no Keras that runs model.fit under the
    strategies, for a task with environment ``env``: none when TensorFlow is absent (nothing to
    say about Keras) or older than Keras 3, or when the task chose Keras 3 itself."""
    tf_version = _major_minor(tensorflow) if tensorflow else None
    if tf_version is None or tf_version < FIRST_KERAS_3:
        return None
    if env.get(LEGACY_KERAS_ENV, "").strip().lower() not in _TRUE:
        return None
    fix = f"{python} -m pip install --no-deps 'tf-keras=={tf_version[0]}.{tf_version[1]}.*'"
    if tf_keras is None:
        return (f"{LEGACY_KERAS_ENV}=1 but {python} has no tf-keras next to TensorFlow {tensorflow}: tf.keras "
                f"is Keras 3, whose model.fit fails under MultiWorkerMirroredStrategy; install it: {fix} "
                f"(or set job.legacy_keras to false for Keras 3)")
    if _major_minor(tf_keras) != tf_version:
        return (f"{LEGACY_KERAS_ENV}=1 but {python} has tf-keras {tf_keras}, not the release of its TensorFlow "
                f"{tensorflow}: tf.keras may fail to import; install the matching one: {fix}")
    return None
