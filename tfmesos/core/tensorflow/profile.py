"""What is specific to TensorFlow, in one place: the profile the job's lifecycle calls.

- Mode: parameter servers make a ``parameter_server`` job; without them the workers reduce
  among themselves (``collective``: MultiWorkerMirroredStrategy).
- Whole-job restarts: a collective job cannot outlive a worker (or the chief), an all-reduce
  peer; a parameter-server job cannot outlive a ps, which holds the variables. Every other task
  is relaunched alone.
- A parameter-server job's running chief knows only the workers it started with: a worker
  relaunched at a new address is used once the chief restarts from its checkpoint.
- Success: ``policies.success`` names the tasks whose exit 0 ends the job: the chief (worker 0
  without one), worker 0, every worker, or none ("never": a cluster of servers runs until stopped).
- A planned stop (a drain, an update): a collective job's workers and chief are all told (they
  save at the step they agree on); a parameter-server job's chief is told (it saves), and the
  servers it stops serve on until it has.
- TensorBoard is a view on the job, not part of it: its failure ends nothing.
- Servers: a ps, and a role without a command (the built-in TensorFlow server), serve until stopped.
- The cluster: TensorFlow's ClusterSpec (``core/tensorflow/clusterspec.py``), and the roles in its order
  (chief, ps, worker, evaluator), the order a job's tasks are listed in.
- What TensorFlow cannot run (``problems``, the one home of such checks): a job with no chief and
  no worker to train (unless it is a cluster of servers: success "never", the caller trains), a
  chief given where the caller is the chief (``tfmesos.cluster()``'s coordinator), a job with no
  task to launch, a success policy that waits on workers the job does not have.
- What is often a slip (a warning, the job runs): parameter servers, a chief and workers all
  running the job's one command. ParameterServerStrategy's tutorial runs its script on the chief
  (the coordinator) and servers on the workers; its workers running the coordinator script too
  each become a second coordinator at the chief's address, and the chief or a worker dies with
  "Could not start gRPC server" (the PSS example so changed: a worker, after 80 s). The same
  shape is right where every task runs the script on purpose: TF1 between-graph replication with
  a chief, an Estimator's train_and_evaluate, a script that starts a server itself on workers
  (the tutorial's full form). Without a chief (tfrun's, douban's between-graph jobs: worker 0
  leads) or with workers as servers, nothing is said.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from .clusterspec import TF_ROLES, cluster_spec
from ..profile import FrameworkProfile, PeerRestart
from ..task_key import TENSORBOARD, TaskKey

if TYPE_CHECKING:  # the spec answers this profile (JobSpec.profile): the hooks see the spec only as a type
    from ..spec import JobSpec, RoleSpec

PARAMETER_SERVER, COLLECTIVE = "parameter_server", "collective"
SERVER_ROLES = ("ps",)  # roles whose tasks serve variables (without a command: the built-in server)


def mode(spec: JobSpec) -> str:
    return PARAMETER_SERVER if spec.count("ps") else COLLECTIVE


def success_keys(spec: JobSpec) -> tuple[TaskKey, ...]:
    success = spec.policies.success
    if success == "never":
        return ()
    if success == "all_workers":
        return tuple(TaskKey("worker", i) for i in range(spec.count("worker")))
    if success == "chief" and spec.count("chief"):
        return (TaskKey("chief", 0),)
    return (TaskKey("worker", 0),)


def restarts_whole_job(spec: JobSpec, key: TaskKey) -> bool:
    if mode(spec) == COLLECTIVE:
        return key.role in ("worker", "chief")
    return key.role == "ps"


def restart_when_moved(spec: JobSpec, moved: Sequence[TaskKey]) -> tuple[PeerRestart, ...]:
    if mode(spec) == PARAMETER_SERVER and any(k.role == "worker" for k in moved):
        return (PeerRestart("chief", "a worker moved to a new address"),)
    return ()


def told_of_stop(spec: JobSpec, leaving: Sequence[TaskKey]) -> tuple[TaskKey, ...]:
    """A collective job: every worker (and the chief) saves at the step they agree on; a
    parameter-server job: the chief saves (the servers hold no Python that could)."""
    if mode(spec) == COLLECTIVE:
        peers = [TaskKey("chief", i) for i in range(spec.count("chief"))]
        return tuple(peers + [TaskKey("worker", i) for i in range(spec.count("worker"))])
    lead = TaskKey("chief", 0) if spec.count("chief") else TaskKey("worker", 0)
    return (lead,) if spec.count(lead.role) else ()


def saves_for_job(spec: JobSpec, key: TaskKey) -> bool:
    """Who saves: a collective job's workers and chief (all at the same step), a parameter-server
    job's chief (worker 0 without one)."""
    if mode(spec) == COLLECTIVE:
        return key.role in ("worker", "chief")
    return key.role == "chief" or (not spec.count("chief") and key == TaskKey("worker", 0))


def essential(spec: JobSpec, key: TaskKey) -> bool:
    return key.role != TENSORBOARD


def is_server(role: RoleSpec) -> bool:
    return role.command is None or role.name in SERVER_ROLES


def problems(spec: JobSpec) -> list[str]:
    found: list[str] = []
    if any(key.role == "chief" for key, _ in spec.external) and spec.count("chief"):
        found.append("$.roles.chief.count: the calling process is the chief (coordinator): expected 0")
    success = spec.policies.success
    if success != "never" and not spec.count("chief") and not spec.count("worker"):
        found.append("$.roles: no chief and no worker: expected at least one task to run the training")
    elif not spec.task_count():
        found.append("$.roles: no task to launch: expected a count >= 1 for some role")
    if success in ("worker0", "all_workers") and not spec.count("worker"):
        found.append(f"$.policies.success: \"{success}\" needs workers: expected $.roles.worker.count >= 1")
    return found


def warnings(spec: JobSpec) -> list[str]:
    chief, worker = spec.role("chief"), spec.role("worker")
    if not (spec.count("ps") and chief and chief.count and worker and worker.count):
        return []
    if not worker.job_command or chief.command != worker.command:
        return []
    return [f"$.roles.worker: the workers run $.job.command {_cut(worker.command)!r}, as the chief does, in a job "
            "with parameter servers. If it is a ParameterServerStrategy coordinator (ClusterCoordinator, "
            "model.fit), every worker runs it as a second coordinator, at the chief's address, and the chief or "
            "a worker fails with 'Could not start gRPC server': set \"server\": true on $.roles.worker for "
            "TensorFlow's built-in server. If every task runs it on purpose (between-graph replication, an "
            "Estimator, a script that starts a server on workers), give $.roles.worker a \"command\" of its own "
            "to say so"]


# Exceptions a peer's end, the network or a preemption raises (TensorFlow's status errors, Python's
# connection errors): the same one twice in a row is no bug of the script's.
TRANSIENT_ERRORS = frozenset({"UnavailableError", "AbortedError", "DeadlineExceededError", "CancelledError",
                              "ConnectionError", "ConnectionResetError", "ConnectionRefusedError",
                              "ConnectionAbortedError", "BrokenPipeError", "TimeoutError"})


def transient_failure(line: str) -> bool:
    """'tensorflow.python.framework.errors_impl.UnavailableError: ...' or a collective's abort."""
    name = line.split(":", 1)[0].rsplit(".", 1)[-1]
    return name in TRANSIENT_ERRORS or "Collective ops is aborted" in line


def _cut(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


TENSORFLOW = FrameworkProfile(
    mode=mode,
    success_keys=success_keys,
    restarts_whole_job=restarts_whole_job,
    restart_when_moved=restart_when_moved,
    essential=essential,
    is_server=is_server,
    cluster=cluster_spec,
    problems=problems,
    role_order=TF_ROLES,
    warnings=warnings,
    transient_failure=transient_failure,
    told_of_stop=told_of_stop,
    saves_for_job=saves_for_job,
)
