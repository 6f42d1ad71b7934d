"""Sandbox layout and the environment an agent gives its executors.

Layout: ``<work_dir>/agents/<agent_id>/frameworks/<framework_id>/executors/
<executor_id>/runs/<container_id>/`` with ``runs/latest`` pointing at the
newest run (as Mesos does under ``slaves/``), holding ``stdout``/``stderr``.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from ..durations import format_duration

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
RECOVERY_TIMEOUT = 15 * 60.0  # agent --recovery_timeout
# Set by an agent that no restart can recover (its work dir goes with its process): "PID START" of
# that process, which the executor watches to end with it (tfmesos/mesos/executor_driver.py). Real
# Mesos has no such variable; its executors follow MESOS_RECOVERY_TIMEOUT.
AGENT_PROCESS_ENV = "LOCALMESOS_AGENT_PROCESS"
EXECUTOR_REREGISTRATION_TIMEOUT = 2.0  # agent --executor_reregistration_timeout


def own_process() -> str:
    """This process as AGENT_PROCESS_ENV names it: its pid and when it started (/proc/self/stat's
    22nd field, clock ticks after boot), so that a pid given to another process is told apart."""
    with open("/proc/self/stat", "rb") as f:
        stat = f.read()
    return f"{os.getpid()} {int(stat[stat.rfind(b')') + 2:].split()[19])}"


def sandbox_path(work_dir: Path, agent_id: str, framework_id: str, executor_id: str, container_id: str) -> Path:
    return (work_dir / "agents" / agent_id / "frameworks" / framework_id / "executors" / executor_id
            / "runs" / container_id)


def create_sandbox(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o750)  # as Mesos makes it (drwxr-x---): a task's files are its user's and group's
    for name in ("stdout", "stderr"):  # created, or left as they are (a touch without its utime try first)
        os.close(os.open(path / name, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666))
    latest = path.parent / "latest"
    try:
        try:
            latest.symlink_to(path.name)
        except FileExistsError:  # an earlier run's: it points at the newest run from now on
            latest.unlink()
            latest.symlink_to(path.name)
    except OSError:
        pass  # the symlink is a convenience only


def executor_base_environment() -> dict[str, str]:
    """What every executor inherits from the agent's own environment: only PATH, with the folder
    of the interpreter the agent runs on first, so that a task's plain ``python`` (and ``tfmesos``,
    ``tfrun``) is that interpreter's, as ``$TFMESOS_PYTHON`` is, even outside an activated venv."""
    return {"PATH": task_path(sys.executable, os.environ.get("PATH") or DEFAULT_PATH)}


def task_path(python: str, path: str) -> str:
    """``path`` with ``python``'s folder first (once)."""
    folder = os.path.dirname(python)
    if not folder:
        return path
    return os.pathsep.join([folder, *(p for p in path.split(os.pathsep) if p and p != folder)])


def executor_environment(
    *,
    agent_endpoint: str,
    agent_id: str,
    agent_pid: str,
    framework_id: str,
    executor_id: str,
    directory: Path,
    checkpoint: bool,
    shutdown_grace_period: float,
    gpus: list[int] | None,
    command: dict[str, Any] | None,
    extra: dict[str, str] | None = None,
) -> dict[str, str]:
    """Slave's executorEnvironment() plus what the Mesos containerizer adds.

    The agent's own environment is not inherited (real executors see no HOME,
    USER, ...) except PATH, which the embedded agent passes through so that
    interpreters from the caller's environment keep working.
    """
    env: dict[str, str] = {
        "LIBPROCESS_IP": agent_endpoint.rsplit(":", 1)[0],
        "LIBPROCESS_PORT": "0",
        "MESOS_FRAMEWORK_ID": framework_id,
        "MESOS_EXECUTOR_ID": executor_id,
        "MESOS_DIRECTORY": str(directory),
        "MESOS_SANDBOX": str(directory),
        "MESOS_SLAVE_ID": agent_id,
        "MESOS_SLAVE_PID": agent_pid,
        "MESOS_AGENT_ENDPOINT": agent_endpoint,
        "MESOS_CHECKPOINT": "1" if checkpoint else "0",
        "MESOS_HTTP_COMMAND_EXECUTOR": "0",
        "MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD": format_duration(shutdown_grace_period),
        **executor_base_environment(),
    }
    if checkpoint:
        env["MESOS_RECOVERY_TIMEOUT"] = format_duration(RECOVERY_TIMEOUT)
        env["MESOS_SUBSCRIPTION_BACKOFF_MAX"] = format_duration(EXECUTOR_REREGISTRATION_TIMEOUT)
    if gpus is not None:
        # Isolation emulation on GPU agents: no device cgroup here, so tell CUDA
        # which devices were allocated ("" for none).  Real Mesos sets neither.
        visible = ",".join(str(index) for index in gpus)
        env["CUDA_VISIBLE_DEVICES"] = visible
        env["NVIDIA_VISIBLE_DEVICES"] = visible
    env.update(extra or {})
    for variable in ((command or {}).get("environment") or {}).get("variables", []):
        if variable.get("type", "VALUE") != "SECRET":
            env[variable["name"]] = variable.get("value", "")
    # Resolved by Mesos' default secret resolver; a SecretError (a reference) fails the launch.
    from .secrets import resolved_environment  # here: reading task_path must not load the HTTP layer

    env.update(resolved_environment(command or {}))
    return env


def command_argv(command: dict[str, Any]) -> tuple[list[str], str | None]:
    """(argv, executable) for a CommandInfo, like the Mesos launcher."""
    if command.get("shell", True):
        return ["/bin/sh", "-c", command.get("value", "")], None
    value = command.get("value", "")
    arguments = list(command.get("arguments", []))
    return (arguments or [value]), value
