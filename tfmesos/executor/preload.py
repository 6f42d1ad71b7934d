"""Everything a running executor imports, for a warm interpreter that forks executors (the
embedded agent's fork server preloads this module): a forked executor then imports nothing.

A cold ``python -m tfmesos.executor`` imports only what it needs to subscribe and the rest when
its task arrives (``executor.py``); this list is that rest.
"""
import ctypes  # noqa: F401 (libc's prctl where there is no setpriv)
import logging  # noqa: F401 (a warning: rare, and cheap here)
import selectors  # noqa: F401
import signal  # noqa: F401
import subprocess  # noqa: F401

from ..core.tensorflow import clusterspec, tracebacks  # noqa: F401 (tracebacks: a failed or pumped task's)
from ..core import task_key  # noqa: F401
from ..task import keras_check, notice  # noqa: F401 (every task's start: the Keras check, the notice's variables)
from ..mesos import messages  # noqa: F401
from . import executor, report_pipe  # noqa: F401
