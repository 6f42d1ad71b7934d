"""Which TensorFlow and tf-keras this interpreter has, read from the installed distributions'
metadata (importing TensorFlow would take seconds), and the one line to say when they cannot run
Keras' model.fit under the strategies (``tfmesos.core.legacy_keras.keras_problem``)."""
from __future__ import annotations

import sys
from importlib import metadata
from typing import Mapping

from ..core.legacy_keras import keras_problem

# The distributions that install the ``tensorflow`` package (tools/install_tf_keras.py's list).
TENSORFLOW_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel",
                            "tensorflow-macos", "tf-nightly", "tf-nightly-cpu")


def _version(*names: str) -> str | None:
    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def installed() -> tuple[str | None, str | None]:
    """(TensorFlow's version, tf-keras' version) in this interpreter; None for what is absent."""
    return _version(*TENSORFLOW_DISTRIBUTIONS), _version("tf-keras", "tf_keras")


def problem_here(env: Mapping[str, str], python: str = sys.executable) -> str | None:
    """The line for a task started with ``env`` on this interpreter, or None when all is well."""
    tensorflow, tf_keras = installed()
    return keras_problem(dict(env), tensorflow, tf_keras, python)
