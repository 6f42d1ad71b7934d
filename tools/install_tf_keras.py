"""Install the tf-keras release that matches the installed TensorFlow, keeping that TensorFlow.

Keras 3 (TensorFlow >= 2.16's default) cannot run ``model.fit`` under MultiWorkerMirroredStrategy
(keras-team/keras#20585); tf-keras, which tasks get through TF_USE_LEGACY_KERAS=1, can. tf-keras
declares a dependency on the ``tensorflow`` distribution, so a plain ``pip install tf-keras`` next
to ``tensorflow-cpu`` (or ``tensorflow[and-cuda]``, a nightly...) installs a second, full
TensorFlow over the first one's files. Its only dependency is TensorFlow, so it is installed here
with ``--no-deps``, pinned to the installed TensorFlow's major.minor, which is how its releases
follow TensorFlow's. Standard library only: the image runs it before tfmesos is installed.

Usage: python tools/install_tf_keras.py [pip options...]   (run with the interpreter to install into)
"""
from __future__ import annotations

import subprocess
import sys
from importlib import metadata

# The distributions that install the ``tensorflow`` package.
TENSORFLOW_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel",
                            "tensorflow-macos", "tf-nightly", "tf-nightly-cpu")
FIRST_KERAS_3 = (2, 16)  # tf.keras is Keras 3 from here on; before, it is Keras 2 and needs nothing


def installed_tensorflow() -> str | None:
    for name in TENSORFLOW_DISTRIBUTIONS:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def main(pip_args: list[str]) -> int:
    version = installed_tensorflow()
    if version is None:
        print("install_tf_keras: no TensorFlow installed here: nothing to match", file=sys.stderr)
        return 1
    major_minor = tuple(int(part) for part in version.split(".")[:2])
    if major_minor < FIRST_KERAS_3:
        print(f"install_tf_keras: TensorFlow {version}'s tf.keras is Keras 2 already: nothing to install")
        return 0
    pin = f"tf-keras=={major_minor[0]}.{major_minor[1]}.*"
    return subprocess.call([sys.executable, "-m", "pip", "install", "--no-deps", *pip_args, pin])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
