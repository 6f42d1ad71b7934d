"""The job's options as ``tfmesos run`` and ``tfmesos update`` read them: a file (or the environment
under the DC/OS package), its relative paths made absolute, every check asked in one round."""
from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from ..options.load import OptionsError, read_options_file
from .job_checks import CheckedJob, check_job


def _absolute_paths(options: dict[str, Any], base: Path | None) -> None:
    """Relative job paths are taken from the options file's folder, wherever tfmesos runs. Options
    from the environment (``base`` None: the DC/OS package) have no such folder, and the scheduler's
    own sandbox is on another agent than the tasks: a relative workdir stays relative (to each
    task's sandbox), and a checkpoint directory must be a path that every task reaches."""
    job = options["job"]
    if base is None:
        if job["checkpoint_dir"] and not os.path.isabs(job["checkpoint_dir"]):
            raise OptionsError([f"$.job.checkpoint_dir: {job['checkpoint_dir']!r} is relative: expected an absolute "
                                "path that every task reaches (a shared filesystem); options from the environment "
                                "have no folder to take it from"])
        return
    for field in ("workdir", "checkpoint_dir"):
        if job[field] and not os.path.isabs(job[field]):
            job[field] = str((base / job[field]).resolve())
    for field in ("secret_env", "secret_files"):  # TARGET=file:PATH: the scheduler reads PATH
        job[field] = [_absolute_source(item, base) for item in job[field]]


def _absolute_source(item: str, base: Path) -> str:
    target, source = item.split("=", 1)
    path = source[len("file:"):] if source.startswith("file:") else ""
    if not path or os.path.isabs(os.path.expanduser(path)):
        return item
    return f"{target}=file:{(base / path).resolve()}"


def load_job(args: argparse.Namespace, embedded: bool = True) -> CheckedJob:
    """The options of ``tfmesos run`` (a file, or the environment under the DC/OS package) and
    the job they describe, every check asked in one round (``job_checks.py``). ``embedded``: the
    job runs on the embedded master; the checkpoint directory is made only for a run that starts."""
    if getattr(args, "options_from_env", False):
        from ..options.env import options_from_env

        document, base, source = options_from_env(os.environ), None, None
    else:
        if not args.options:
            raise OptionsError(["no options: expected OPTIONS.json or --options-from-env"])
        source = Path(args.options)
        document, base = read_options_file(source), source.resolve().parent
    return check_job(document, os.environ, embedded, create=not getattr(args, "dry_run", False),
                     prepare=lambda options: _absolute_paths(options, base), source=source)
