"""Whether a task that ended is relaunched, and after how long.

Semantics follow Kubeflow's TFJob where they overlap: ``ExitCode`` treats exit codes 1-127
as permanent (a bug in the program) and 128-255 as retryable (killed by a signal: OOM, a
preemption, a kill -9). Mesos-side losses (agent lost or gone, executor died) are always
retryable except under ``Never``; an invalid task (TASK_ERROR) never is, nor one whose
executor could not start in the job's image (that image fails every relaunch alike).

A bug that fails the same way every time is not relaunched under ``OnFailure`` or ``Always``
either: a task whose end repeats the exception line of the failure that relaunched it (its own,
or the one that restarted the whole job), from a script that raised (exit code 1-127), stops
there (``Ending.repeats``; the framework says which lines a peer or the network causes, which
repeat without a bug). Checkpoints make this safe: a relaunch goes on from where the last one
left, so the same exception twice in a row is the same code failing on the same data.

Limits: a role's ``max_restarts`` bounds the relaunches its task's failures caused. Where a
task's failure restarts the whole job (the framework says which: TensorFlow's all-reduce peers,
its parameter servers), the restart is the job's, not the task's: it counts once, whichever task
failed, and ``max_restarts`` of the failed task's role bounds how many whole-job restarts the job
has had. (Counted per task, two workers that each failed once had restarted a collective job
twice under ``max_restarts: 1``.) ``max_job_restarts`` bounds every relaunch of the job together.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..spec import RestartPolicy
from ..task_state import (TASK_DROPPED, TASK_ERROR, TASK_FINISHED, TASK_GONE, TASK_GONE_BY_OPERATOR, TASK_LOST,
                          TASK_UNREACHABLE, EndKind, TaskState)

# Ends where the process may never have had a say: the machine, the agent or the executor went away.
INFRASTRUCTURE_STATES = frozenset({TASK_LOST, TASK_DROPPED, TASK_GONE, TASK_GONE_BY_OPERATOR, TASK_UNREACHABLE})
INFRASTRUCTURE_REASONS = frozenset(
    {
        "REASON_AGENT_REMOVED",
        "REASON_AGENT_REMOVED_BY_OPERATOR",
        "REASON_AGENT_DISCONNECTED",
        "REASON_AGENT_RESTARTED",
        "REASON_EXECUTOR_TERMINATED",
        "REASON_EXECUTOR_REGISTRATION_TIMEOUT",
        "REASON_EXECUTOR_REREGISTRATION_TIMEOUT",
        "REASON_CONTAINER_LAUNCH_FAILED",
        "REASON_CONTAINER_PREEMPTED",
        "REASON_INVALID_OFFERS",
    }
)
# A launch that never reached an agent: its offer was stale (TASK_LOST, REASON_INVALID_OFFERS: an
# ACCEPT sent on a stream that had just dropped) or the master does not know the task when asked
# (reconciliation). No process ran, so no policy applies: the task is placed again, and counts
# against the job's max_job_restarts only (which bounds a launch that never gets through).
UNLAUNCHED_STATES = frozenset({TASK_LOST, TASK_DROPPED})
UNLAUNCHED_REASONS = frozenset({"REASON_INVALID_OFFERS", "REASON_RECONCILIATION"})
# A container that failed to launch, or an executor that died before it started its task.
IMAGE_REASONS = frozenset({"REASON_CONTAINER_LAUNCH_FAILED", "REASON_EXECUTOR_TERMINATED"})
AGENT_LOSS_REASONS = frozenset(
    {"REASON_AGENT_REMOVED", "REASON_AGENT_REMOVED_BY_OPERATOR", "REASON_AGENT_DISCONNECTED", "REASON_AGENT_RESTARTED"}
)


@dataclass(frozen=True)
class Ending:
    """How a task ended, as far as the scheduler can tell."""

    state: TaskState
    reason: str = ""
    exit_code: int | None = None
    kind: EndKind = EndKind.REPORTED
    image: str = ""  # job.image, given when the task ended before its executor ever started it
    staged: bool = False  # it ended while TASK_STAGING: no update from an agent came before
    repeats: str = ""  # the exception line it ended with, when the failure before it ended so too (see above)

    @property
    def startup_timeout(self) -> bool:
        return self.kind is EndKind.STARTUP_TIMEOUT

    @property
    def image_unusable(self) -> bool:
        """The agent could not start the executor in the job's image (not found, or no python3
        with tfmesos): every relaunch would fail the same way."""
        return bool(self.image) and self.reason in IMAGE_REASONS

    @property
    def succeeded(self) -> bool:
        return self.state == TASK_FINISHED

    @property
    def infrastructure(self) -> bool:
        return self.state in INFRASTRUCTURE_STATES or self.reason in INFRASTRUCTURE_REASONS

    @property
    def never_launched(self) -> bool:
        return self.staged and self.state in UNLAUNCHED_STATES and self.reason in UNLAUNCHED_REASONS

    @property
    def agent_lost(self) -> bool:
        return self.reason in AGENT_LOSS_REASONS or self.state in (TASK_GONE, TASK_GONE_BY_OPERATOR)


@dataclass(frozen=True)
class Decision:
    retry: bool
    why: str
    delay: float = 0.0


def should_retry(policy: RestartPolicy, ending: Ending) -> tuple[bool, str]:
    """The policy's verdict alone, before limits."""
    if ending.state == TASK_ERROR:
        return False, "the task is invalid (TASK_ERROR); relaunching the same would fail again"
    if ending.image_unusable:
        return False, (f"$.job.image {ending.image!r}: the agent could not start tfmesos' executor in it; expected "
                       "an image on the agent's registry with python3 (or job.python) holding tfmesos and TensorFlow "
                       "(a first pull slower than the agent's --executor_registration_timeout also ends so: raise it)")
    if ending.succeeded:
        always = policy == RestartPolicy.ALWAYS
        return always, ("restart policy Always" if always else "finished")
    if policy == RestartPolicy.NEVER:
        return False, "restart policy Never"
    if policy in (RestartPolicy.ON_FAILURE, RestartPolicy.ALWAYS):
        if ending.repeats:
            return False, ("the same exception as the failure before it: a bug that fails the same way every time, "
                           "which no relaunch fixes (restart_policy ExitCode stops at the first exit code 1-127)")
        return True, f"restart policy {policy}"
    # ExitCode
    if ending.infrastructure or ending.startup_timeout:
        return True, "lost to the infrastructure, retryable under ExitCode"
    code = ending.exit_code
    if code is not None and 128 <= code <= 255:
        return True, f"exit code {code} is retryable (128-255)"
    if code is not None:
        return False, f"exit code {code} is permanent (1-127) under ExitCode"
    return True, "no exit code; retryable under ExitCode"


def backoff(restarts: int, base: float, cap: float) -> float:
    """Delay before relaunch number ``restarts + 1``: base, 2*base, 4*base, ... capped."""
    if base <= 0:
        return 0.0
    return min(cap, base * (2 ** min(restarts, 30)))


def decide(
    policy: RestartPolicy,
    ending: Ending,
    task_restarts: int,
    max_restarts: int,
    job_restarts: int,
    max_job_restarts: int,
    backoff_base: float,
    backoff_cap: float,
    whole_job: bool = False,
) -> Decision:
    """``task_restarts``: what ``max_restarts`` bounds, the task's own relaunches, or with
    ``whole_job`` (its failure restarts the whole job) the whole job's restarts so far."""
    if ending.never_launched:  # no process ran: no policy applies, and it is no restart of the task
        retry, why = True, (f"its launch never reached an agent ({ending.reason}): placed again under any "
                            "restart policy, not counted as the task's restart")
        task_restarts = 0  # its backoff is the first one: the task's own restarts do not grow
    else:
        retry, why = should_retry(policy, ending)
    if not retry:
        return Decision(False, why)
    if task_restarts >= max_restarts and not ending.never_launched:
        if whole_job:
            times = "once" if task_restarts == 1 else f"{task_restarts} times"
            return Decision(False, f"the whole job restarted {times}, the limit (max_restarts {max_restarts}: "
                                   "a whole-job restart counts once, whichever task failed)")
        return Decision(False, f"task relaunched {task_restarts} times, the limit (max_restarts {max_restarts})")
    if job_restarts >= max_job_restarts:
        return Decision(False, f"job relaunched tasks {job_restarts} times, the limit (max_job_restarts {max_job_restarts})")
    return Decision(True, why, backoff(task_restarts, backoff_base, backoff_cap))
