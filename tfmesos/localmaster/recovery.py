"""Checkpoints that let a restarted master (same ``work_dir``) recover.

``<work_dir>/meta/agents.json`` keeps each agent's id and port, so agents come
back with the same id at the same ``MESOS_AGENT_ENDPOINT``.  One JSON file per
live container (``meta/agents/<agent>/containers/<container>.json``) records
who started which process.  After a restart, containers of checkpointing
frameworks' custom executors whose process still runs are re-adopted (the
executor re-subscribes, as pymesos does with ``MESOS_CHECKPOINT=1``); every
other surviving container is killed, as a real agent destroys unknown ones.
"""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def _meta(work_dir: Path) -> Path:
    return work_dir / "meta"


def _write_atomically(path: Path, value: Any) -> None:
    """``value`` as JSON (a ``str`` is taken as JSON already encoded)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(value if isinstance(value, str) else json.dumps(value))
    os.replace(temporary, path)


def load_agents(work_dir: Path) -> list[dict[str, Any]]:
    """[{"id": ..., "port": ...}] of the previous run, or []."""
    try:
        return list(json.loads((_meta(work_dir) / "agents.json").read_text()))
    except (OSError, ValueError):
        return []


def save_agents(work_dir: Path, agents: list[dict[str, Any]]) -> None:
    _write_atomically(_meta(work_dir) / "agents.json", agents)


def container_path(work_dir: Path, agent_id: str, container_id: str) -> Path:
    return _meta(work_dir) / "agents" / agent_id / "containers" / f"{container_id}.json"


def checkpoint_container(path: Path, record: dict[str, Any] | str) -> None:
    try:
        _write_atomically(path, record)
    except OSError as error:  # losing a checkpoint only loses recoverability
        log.warning("cannot checkpoint %s: %s", path, error)


def remove_container(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def load_containers(work_dir: Path, agent_id: str) -> list[tuple[Path, dict[str, Any]]]:
    directory = _meta(work_dir) / "agents" / agent_id / "containers"
    found = []
    for path in sorted(directory.glob("*.json")):
        try:
            found.append((path, json.loads(path.read_text())))
        except (OSError, ValueError):
            remove_container(path)
    return found
