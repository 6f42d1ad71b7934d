"""How a job's status reads as text: one home for the task table and the progress line that
`tfmesos run` (its summary) and `tfmesos status` both print from a status snapshot
(``tfmesos.core.status``)."""
from __future__ import annotations

from ..core.state.notices import killed_exit
from ..core.status import Progress, TaskStatus
from ..core.task_state import TASK_KILLED


def progress_text(task: str, progress: Progress, width: int = 20) -> str:
    """'chief:0 [#####.....] step 200/400 (50%) loss 0.0229 accuracy 0.91'"""
    step, total = progress.step, progress.total_steps
    parts = [task]
    if step is not None and total is not None and total > 0:
        fraction = min(1.0, step / total)
        filled = int(round(fraction * width))
        parts.append(f"[{'#' * filled}{'.' * (width - filled)}] step {step:g}/{total:g} ({fraction:.0%})")
    elif step is not None:
        parts.append(f"step {step}")
    shown = {"loss": progress.loss} if progress.loss is not None else {}
    for name, value in {**shown, **progress.metrics}.items():
        parts.append(f"{name} {value:.4g}" if isinstance(value, float) else f"{name} {value}")
    return " ".join(parts)


def phase_text(phase: str, queued: str) -> str:
    """The phase a person is shown: a placing job that waits in the queue (``queued`` says why) is
    QUEUED, in ``tfmesos status``, ``tfmesos jobs`` and on the page alike (the API keeps PLACING)."""
    return "QUEUED" if queued else phase


def task_row(t: TaskStatus) -> str:
    """'worker:1      127.0.0.1:31001       TASK_FAILED    restarts 1 (+1 asked for) exit 1  KeyError: 'x''"""
    asked = f" (+{t.requested_restarts} asked for)" if t.requested_restarts else ""
    if t.exit_code is None:
        exit_part = ""
    else:  # a kill's exit as its end said it (core/state/notices.py): 143 and 0 are both a kill
        exit_part = " " + (killed_exit(t.exit_code) if t.state == TASK_KILLED else f"exit {t.exit_code}")
    asked += f" (+{t.planned_stops} planned)" if t.planned_stops else ""
    why = f"  {t.exception}" if t.exception else ""  # of its last attempt: a relaunch clears it
    return f"{t.name:<12} {t.endpoint or '-':<21} {t.state:<14} restarts {t.restarts}{asked}{exit_part}{why}"
