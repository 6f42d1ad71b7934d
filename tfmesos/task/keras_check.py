"""Which TensorFlow and tf-keras this interpreter has, read from the installed distributions'
metadata (importing TensorFlow would take seconds), and the one line to say when they cannot run
Keras' model.fit under the strategies (``tfmesos.core.tensorflow.legacy_keras.keras_problem``)."""
from __future__ import annotations

import os
import sys

from ..core.tensorflow.legacy_keras import keras_problem

TYPE_CHECKING = False
if TYPE_CHECKING:  # not at run time: the executor imports this module (typing costs each one ~4 ms)
    from typing import Mapping

# The distributions that install the ``tensorflow`` package (and tf-keras), as their .dist-info
# folders spell them (NAME-VERSION.dist-info, the name's case aside). Matched without a regex: the
# executor checks this at every task's start, and each compiled pattern is ~0.25 ms of it.
_DISTRIBUTIONS = frozenset(("tensorflow", "tensorflow_cpu", "tensorflow_gpu", "tensorflow_intel", "tensorflow_macos",
                            "tf_nightly", "tf_nightly_cpu", "tf_keras"))
_DIST_INFO = ".dist-info"


def installed(paths: list[str] | None = None) -> tuple[str | None, str | None]:
    """(TensorFlow's version, tf-keras' version) on this interpreter's path; None for what is
    absent. The .dist-info folders' names, as importlib.metadata reads them, without its imports
    (zipfile, email...), which a scheduler's start would otherwise pay for."""
    tensorflow = tf_keras = None
    for folder in paths if paths is not None else sys.path:
        try:
            names = os.listdir(folder or ".")
        except OSError:
            continue
        for name in names:
            if not name.lower().endswith(_DIST_INFO):
                continue
            distribution, _, version = name[:-len(_DIST_INFO)].partition("-")
            distribution = distribution.lower()
            if distribution not in _DISTRIBUTIONS or not version or "-" in version:
                continue
            if distribution == "tf_keras":
                tf_keras = tf_keras or version
            else:
                tensorflow = tensorflow or version
    return tensorflow, tf_keras


def problem_here(env: Mapping[str, str], python: str = sys.executable) -> str | None:
    """The line for a task started with ``env`` on this interpreter, or None when all is well."""
    tensorflow, tf_keras = installed()
    return keras_problem(dict(env), tensorflow, tf_keras, python)
