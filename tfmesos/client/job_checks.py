"""Every check of a job's options in one round, for every front-end (``tfmesos run`` and its dry
run, ``tfmesos.cluster()``, ``tfrun``): the document's (the schema), the job's as its framework
sees it (the profile) and the place's (preflight), the three homes that
docs/developers/architecture.md names, each asked here and nowhere else.

A person fixing a file wants every problem at once. Where the schema refuses a part, that part
is set back to its default (``options/load.py``'s ``repaired``) so that the other two homes can
look at the rest in the same round; what they say about a repaired part is left out, since it
would be about the default, not about what the user wrote.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from ..core.spec import JobSpec, TaskKey
from ..options.jobspec import job_spec_and_problems
from ..options.load import OptionsError, repaired, schema_problems, with_defaults
from ..options.problems import json_path
from ..scheduler.preflight import place_problems

# A JSON path as problems write them: $.roles.worker.command, $.job.env[2].
_PATH = re.compile(r"\$(?:\.[A-Za-z0-9_-]+|\[\d+\])+")


@dataclass(frozen=True)
class CheckedJob:
    options: dict[str, Any]  # resolved: the schema's defaults under the user's options
    spec: JobSpec
    warnings: list[str]  # the profile's, then the place's


def check_job(document: Any, environ: Mapping[str, str], embedded: bool, create: bool = True,
              prepare: Callable[[dict[str, Any]], None] | None = None,
              external: tuple[tuple[TaskKey, str], ...] = (), success: str | None = None,
              source: Path | None = None) -> CheckedJob:
    """The job the options describe, or one ``OptionsError`` with every problem of the three homes.
    ``prepare`` completes the resolved options before the job is built (``tfmesos run``: paths
    relative to the options file), refusing with ``OptionsError``; ``create``: the place's check may make the checkpoint
    directory (an embedded run that will start), only once nothing else is wrong; ``source``:
    the file the options came from (a YAML file's problems name their lines)."""
    resolved = with_defaults(document)
    refused = schema_problems(resolved)
    options, repaired_paths = repaired(resolved, refused) if refused else (resolved, [])
    if refused and schema_problems(options):  # nothing sound left to look at
        _refuse([p.line for p in refused], source)
    prepared: list[str] = []
    if prepare is not None:
        try:
            prepare(options)
        except OptionsError as exc:
            prepared = exc.problems
    spec, problems = job_spec_and_problems(options, external, success)
    problems = prepared + problems
    place, warnings = place_problems(spec, options, environ, embedded, create=create and not (refused or problems))
    problems += place
    if refused:
        around = [json_path(path) for path in repaired_paths]
        problems = [p.line for p in refused] + [p for p in problems if not _about(p, around)]
    if problems:
        _refuse(problems, source)
    return CheckedJob(options, spec, spec.profile.warnings(spec) + warnings)


def _about(problem: str, paths: list[str]) -> bool:
    """Whether a problem names a part of the document at, inside or around one of ``paths``."""
    return any(_related(named, path) for named in _PATH.findall(problem) for path in paths)


def _related(a: str, b: str) -> bool:
    short, long = sorted((a, b), key=len)
    return long == short or long.startswith((short + ".", short + "["))


def _refuse(problems: list[str], source: Path | None) -> None:
    error = OptionsError(problems)
    if source is not None:
        from ..options.files import with_yaml_lines

        error = with_yaml_lines(error, source)
    raise error
