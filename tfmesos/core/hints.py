"""What to check next, from what a failure looks like: pure text in, one hint (or "") out."""
from __future__ import annotations

import re

# What a shell or Python prints when the command's program or module is not where the task runs:
# `sh: 1: python: not found`, `bash: foo: command not found`, `ModuleNotFoundError: No module named 'x'`.
_MISSING = re.compile(r"No module named|: (command )?not found$", re.MULTILINE)


def missing_program_hint(output: str) -> str:
    """A hint when a task's output (the last lines of a failed task) says a program or Python
    module was not found, else ""."""
    if not _MISSING.search(output):
        return ""
    return ("a program or Python module was not found where the task runs: start Python as "
            "\"$TFMESOS_PYTHON\" (the interpreter named by job.python, the scheduler's own by default; "
            "on the embedded master plain `python` is that one too), and install the module for it")


def no_offer_hint(gpus_needed: bool) -> str:
    """Why a job may have received no offer at all."""
    text = "no offer was received: is any agent registered, and does its Mesos role match service.role?"
    if gpus_needed:
        return text
    return (text + " This job asks for no GPUs, so Mesos offers it no agent that has GPUs (they go only to "
            "frameworks with GPU_RESOURCES, which tfmesos asks for when a TensorFlow role wants \"gpus\"): it needs "
            "agents without GPUs")
