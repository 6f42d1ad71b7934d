"""What to check next, from what a failed task printed: pure text in, one hint (or "") out."""
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

