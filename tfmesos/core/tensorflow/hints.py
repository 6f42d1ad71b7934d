"""What to check next, from what a failed task printed: pure text in, one hint (or "") out."""
from __future__ import annotations

import posixpath
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



# What Python prints when the script it was given is not there: `python3: can't open file '/x/train.py': [Errno 2] ...`.
_NO_SCRIPT = re.compile(r"can't open file '(?P<path>[^']+)': \[Errno 2\]")
# A Mesos sandbox: .../executors/EXECUTOR_ID/runs/CONTAINER_ID (MESOS_SANDBOX).
_SANDBOX = re.compile(r"/executors/[^/]+/runs/[^/]+$")


def script_not_found_hint(output: str) -> str:
    """A hint when Python could not open the script it was given: where the command ran, and what
    puts the script there; else ""."""
    found = _NO_SCRIPT.search(output)
    if not found:
        return ""
    folder, name = posixpath.split(found.group("path"))
    where = f"the command ran in {folder}"
    if _SANDBOX.search(folder):
        return (f"{where}, the task's sandbox, which holds no {name}: the task does not run in the folder you "
                "started tfmesos from. Set job.workdir to the script's folder (relative to the options file, "
                "on a path the agents see), or ship the script with job.uris or job.image")
    return (f"{where}, where {name} is not: check that the folder exists on the agent with the script in it "
            "(job.workdir names it; job.uris or job.image can ship it)")


def failure_hints(output: str) -> list[str]:
    """Every hint that a failed task's last lines call for."""
    return [hint for hint in (script_not_found_hint(output), missing_program_hint(output)) if hint]
