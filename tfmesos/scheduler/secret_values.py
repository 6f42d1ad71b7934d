"""The values of the job's ``env:``/``file:`` secrets, read by the scheduler at its start.

They stay in this process' memory (``core.secrets.SecretValues``, whose repr shows names only)
and leave it only in the tasks' payloads (``tfmesos.mesos.taskinfo``). Every message here names the option, the
variable or the file, never what they hold.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Mapping

from ..core.secrets import SecretUse, SecretValues, read_by_scheduler
from ..errors import UsageError, cut

MAX_BYTES = 64 << 10  # a key, a token or a keytab is a few KB; every task's payload carries each value


def _problem(use: SecretUse, why: str, check: str) -> UsageError:
    return UsageError(f"{use.where} {use.target}={use.source}", why, check)


def _read_file(use: SecretUse, path: Path) -> bytes:
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise _problem(use, f"{cut(str(path))!r} is not a regular file", "expected the file that holds the secret")
        if info.st_size > MAX_BYTES:
            raise _problem(use, f"{cut(str(path))!r} holds {info.st_size} bytes", f"expected at most {MAX_BYTES}")
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise _problem(use, f"cannot read {cut(str(path))!r}: {exc.strerror}",
                       "expected a file this user can read") from None
    if len(data) > MAX_BYTES:
        raise _problem(use, f"{cut(str(path))!r} holds more than {MAX_BYTES} bytes", f"expected at most {MAX_BYTES}")
    return data


def read_one(use: SecretUse, environ: Mapping[str, str]) -> bytes:
    """One secret's value, or a ``UsageError`` naming its option and source (never a value)."""
    source = use.source
    if source.kind == "env":
        if source.name not in environ:
            raise _problem(use, f"the scheduler's environment has no {source.name}",
                           f"expected {source.name} exported where 'tfmesos run' starts")
        data = os.fsencode(environ[source.name])
    else:
        data = _read_file(use, Path(os.path.expanduser(source.name)))
    if not use.as_file:
        if b"\0" in data:
            raise _problem(use, "the value holds a NUL byte, which an environment variable cannot",
                           "expected text, or the secret as a file (job.secret_files)")
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise _problem(use, "the value is not UTF-8 text", "expected text, or the secret as a file "
                           "(job.secret_files)") from None
    return data


def read_values(uses: tuple[SecretUse, ...], environ: Mapping[str, str]) -> SecretValues:
    """The values of every ``env:``/``file:`` secret; references are left to the agents."""
    return SecretValues({use: read_one(use, environ) for use in read_by_scheduler(uses)})


def value_problems(uses: tuple[SecretUse, ...], environ: Mapping[str, str]) -> list[str]:
    """Each secret the scheduler could not read, one line each (the preflight's; values dropped)."""
    problems = []
    for use in read_by_scheduler(uses):
        try:
            read_one(use, environ)
        except UsageError as exc:
            problems.append(exc.line())
    return problems
