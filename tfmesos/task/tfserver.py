"""Built-in TensorFlow server run by tfmesos tasks that have no command of their own.

Parameter servers (and the workers of ParameterServerStrategy jobs) only host a
``tf.distribute.Server``: the chief drives them remotely. Run as::

    python -m tfmesos.task.tfserver

The task's place in the cluster comes from ``TF_CONFIG``. A TensorFlow server never
exits on its own, so this one blocks until SIGTERM or SIGINT and then exits 0; after a
planned-stop notice (tfmesos/task/notice.py) a SIGTERM makes it linger until the chief has saved.
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import signal
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from . import notice

PROG = "python -m tfmesos.task.tfserver"
# A lingering server leaves this long before the notice's deadline: exit 0 rather than SIGKILL.
LINGER_MARGIN_S = 1.0
KERAS = ("keras", "tf_keras")


class _Refused(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        raise ImportError(f"{module.__name__} is not loaded by a TensorFlow server ({PROG})")


class NoKeras(importlib.abc.MetaPathFinder):
    """Keras found but never loaded. A server runs no model code, yet ``import tensorflow`` loads
    all of Keras, and through Keras' wrappers scikit-learn and SciPy where they are installed:
    about 1.5 s of CPU and 80 MB per server, for nothing. TensorFlow looks up Keras' folder (the
    spec is the real one's) and imports its optimizers inside ``except ImportError`` (refused)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if name not in KERAS:
            return None
        sys.meta_path.remove(self)
        try:
            real = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if real is None:
            return None
        spec = importlib.machinery.ModuleSpec(name, _Refused(), origin=real.origin, is_package=True)
        spec.submodule_search_locations = real.submodule_search_locations
        return spec


class ConfigError(ValueError):
    """TF_CONFIG is missing or does not name this task's address."""


def parse_tf_config(raw: str | None) -> tuple[dict[str, list[str]], str, int]:
    """Return ``(cluster, job_name, task_index)`` from a TF_CONFIG JSON string."""
    if not raw:
        raise ConfigError("TF_CONFIG is not set")
    try:
        config: Any = json.loads(raw)
        cluster = {str(job): [str(a) for a in addrs] for job, addrs in config["cluster"].items()}
        job_name = str(config["task"]["type"])
        task_index = int(config["task"]["index"])
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ConfigError(f"TF_CONFIG is not valid: {exc}") from exc
    if not 0 <= task_index < len(cluster.get(job_name, [])):
        raise ConfigError(f"TF_CONFIG's cluster has no address for {job_name}:{task_index}")
    return cluster, job_name, task_index


def main(argv: Sequence[str] | None = None) -> int:
    argparse.ArgumentParser(
        prog=PROG,
        description="Start a TensorFlow gRPC server for the task described by TF_CONFIG "
        "and serve until SIGTERM or SIGINT.",
    ).parse_args(argv)
    try:
        cluster, job_name, task_index = parse_tf_config(os.environ.get("TF_CONFIG"))
    except ConfigError as exc:
        print(f"tfmesos.task.tfserver: {exc}", file=sys.stderr)
        return 2

    # Block the stop signals before TensorFlow starts any thread, so that every thread
    # inherits the mask and the main thread alone receives them through sigwait; one
    # that arrives during the slow import stays pending instead of being lost.
    stop_signals = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.meta_path.insert(0, NoKeras())
    import tensorflow as tf  # lazy: keeps --help and config errors fast

    if stop_signals & signal.sigpending():
        return 0
    address = cluster[job_name][task_index]
    try:
        # Bound to a name so that it lives until exit: collecting it would stop the server.
        _server = tf.distribute.Server(
            tf.train.ClusterSpec(cluster),
            job_name=job_name,
            task_index=task_index,
            protocol="grpc",
            start=True,
        )
    except tf.errors.OpError as exc:  # typically the port is taken
        print(f"tfmesos.task.tfserver: cannot serve {job_name}:{task_index} on {address}: "
              f"{exc.message}", file=sys.stderr)
        return 1
    print(f"tfmesos.task.tfserver: {job_name}:{task_index} serving on {address} (TensorFlow {tf.__version__})", flush=True)
    if signal.sigwait(stop_signals) == signal.SIGTERM:
        linger(f"{job_name}:{task_index}", stop_signals)
    print(f"tfmesos.task.tfserver: {job_name}:{task_index} stopping", flush=True)
    return 0


def linger(name: str, stop_signals: set[signal.Signals]) -> None:
    """After a SIGTERM that follows a notice (a planned stop), keep serving until a second SIGTERM
    or SIGINT, or until LINGER_MARGIN_S before the notice's deadline: the chief (which got the
    notice too) still needs this server to finish its step and save; tfmesos sends the second
    SIGTERM once the chief has. Without a notice, SIGTERM stops the server at once, as always."""
    found = notice.notice()
    if found is None:
        return
    left = found.seconds_left()
    until = "a second SIGTERM" if left is None else f"a second SIGTERM or {max(0.0, left - LINGER_MARGIN_S):.0f} s"
    print(f"tfmesos.task.tfserver: {name}: planned stop ({found.reason}): serving until {until}, "
          "for the chief to save", flush=True)
    if left is None:
        signal.sigwait(stop_signals)
    else:
        signal.sigtimedwait(stop_signals, max(0.0, left - LINGER_MARGIN_S))


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # A gRPC server cannot be shut down cleanly (TensorFlow does not implement it), and
    # its threads can hold up interpreter shutdown; leave at once instead.
    os._exit(code)
