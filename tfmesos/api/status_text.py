"""How a job's status reads as text: one home for the task table and the progress line that
`tfmesos run` (its summary) and `tfmesos status` both print from a /v1/status snapshot."""
from __future__ import annotations

from typing import Any


def progress_text(task: str, progress: dict[str, Any], width: int = 20) -> str:
    """'chief:0 [#####.....] step 200/400 (50%) loss 0.0229 accuracy 0.91'"""
    step, total = progress.get("step"), progress.get("total_steps")
    parts = [task]
    if isinstance(step, (int, float)) and isinstance(total, (int, float)) and total > 0:
        fraction = min(1.0, step / total)
        filled = int(round(fraction * width))
        parts.append(f"[{'#' * filled}{'.' * (width - filled)}] step {step:g}/{total:g} ({fraction:.0%})")
    elif step is not None:
        parts.append(f"step {step}")
    for name, value in progress.items():
        if name in ("step", "total_steps", "at", "fraction"):
            continue
        parts.append(f"{name} {value:.4g}" if isinstance(value, float) else f"{name} {value}")
    return " ".join(parts)


def task_row(t: dict[str, Any]) -> str:
    """'worker:1      127.0.0.1:31001       TASK_RUNNING   restarts 1 (+1 asked for) exit 0'"""
    name = f"{t['role']}:{t['index']}"
    asked = f" (+{t['requested_restarts']} asked for)" if t.get("requested_restarts") else ""
    exit_part = "" if t.get("exit_code") is None else f" exit {t['exit_code']}"
    return f"{name:<12} {t['endpoint'] or '-':<21} {t['state']:<14} restarts {t['restarts']}{asked}{exit_part}"
