"""The scheduler <-> executor contract: TaskInfo.data, the framework messages both ways and the
data of the executor's status updates. One encode/decode and one protocol number for all.

An executor runs the tfmesos installed on its agent, which may not be the scheduler's: every
payload carries ``v``, and a payload of another protocol is refused naming both numbers (the
executor fails its task with that message rather than misreading it). Bump ``PROTOCOL`` on any
change an older peer could misread: a renamed or removed field, a changed meaning.

Protocols: 1, the first versioned one; 2, ``TaskPayload.job`` (which held the service's name)
became ``TaskPayload.service``; 3, ``TaskPayload.secret_env``/``secret_files`` (an older executor
would start the task without its secrets); 4, the ClusterSpec never rides in the TaskInfo
(``TaskPayload.spec_version``/``cluster`` gone: a gang's TaskInfos grew with its square): every
executor asks for it (``NeedSpec``) once it has its task, and ``ClusterSpecMessage`` carries it
compressed (``cluster_z``). Still 4: a small gang's ``TaskPayload`` carries it again, compressed
(``spec_version``/``cluster_z``, optional): an executor of protocol 4 before them ignores the
fields and asks, and is answered.
"""
from __future__ import annotations

import base64
import dataclasses
import json
import zlib
from dataclasses import dataclass, field

# No typing at run time: every executor imports this module (typing costs each one ~4 ms and
# 0.6 MiB). So KIND is a plain class attribute (not a ClassVar annotation: without typing loaded,
# dataclasses would take an annotated one for a field) and Message a plain union of the classes.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PROTOCOL = 4

# Sandbox files of the task that streams its output, which a scheduler that missed messages (a
# master failover, its own restart) reads through the agent's files API: every forwarded line,
# in order (OutputLines.offset points into it), and the latest values given tfmesos.report().
OUTPUT_LOG = "output.log"
PROGRESS_FILE = "progress.json"


class ProtocolMismatch(ValueError):
    def __init__(self, what: str, theirs: Any):
        self.theirs = theirs
        super().__init__(f"{what} speaks tfmesos protocol {theirs}, this tfmesos speaks protocol {PROTOCOL}: "
                         "install the same tfmesos version for the scheduler and on the agents")


@dataclass(frozen=True)
class TaskPayload:
    """TaskInfo.data: what the executor needs to start the task's process."""

    KIND = "task"
    role: str
    index: int
    port: int
    restarts: int
    command: str | None  # None: the built-in TensorFlow server
    env: dict[str, str]
    workdir: str
    checkpoint_dir: str
    python: str
    service: str  # the service's name (options' service.name): the task sees it as TFMESOS_SERVICE
    stream_output: bool  # the task that decides success streams its output to the scheduler
    # The job's env:/file: secrets (core.secrets): variables, and files under the sandbox (base64).
    # Only here, never in a Mesos VALUE secret, which the master shows in its state.
    secret_env: dict[str, str] = field(default_factory=dict, repr=False)
    secret_files: dict[str, str] = field(default_factory=dict, repr=False)
    # A small gang's ClusterSpec, as a ClusterSpecMessage holds it (core/job/cluster_spec_sync.py,
    # INLINE_MAX_ADDRESSES): the task starts at once. "": the executor asks for it (NeedSpec) and
    # the task starts when it arrives; a big gang's in every TaskInfo, which the master and each
    # agent parse and checkpoint, made its TaskInfo bytes grow with the square of its size.
    # Optional: a protocol 4 executor ignores them and asks, and is answered.
    spec_version: int = 0
    cluster_z: str = ""

    def cluster_spec(self) -> ClusterSpecMessage | None:
        """The ClusterSpec it carries; None where it carries none."""
        return ClusterSpecMessage(self.spec_version, self.cluster_z) if self.cluster_z else None


@dataclass(frozen=True)
class ClusterSpecMessage:
    """Scheduler -> executor: every task's address, a newer version replacing an older one. Sent
    once per executor and version, so compressed: a gang's addresses share hosts and port
    prefixes (1,000 workers: 20-30 kB of JSON, 3-5 kB deflated)."""

    KIND = "clusterspec"
    version: int
    cluster_z: str  # base64 of the zlib-deflated compact JSON of {TF job name: [host:port, ...]}

    @classmethod
    def of(cls, version: int, cluster: dict[str, list[str]]) -> ClusterSpecMessage:
        text = json.dumps(cluster, separators=(",", ":")).encode()
        return cls(version, base64.b64encode(zlib.compress(text, 6)).decode())

    def cluster(self) -> dict[str, list[str]]:
        """The ClusterSpec; ValueError (naming it) where ``cluster_z`` is not one."""
        try:
            cluster = json.loads(zlib.decompress(base64.b64decode(self.cluster_z)))
        except (ValueError, zlib.error) as exc:
            raise ValueError(f"tfmesos clusterspec message: cluster_z is not a deflated ClusterSpec: {exc}") from None
        if not isinstance(cluster, dict) or not all(
                isinstance(v, list) and all(isinstance(a, str) for a in v) for v in cluster.values()):
            raise ValueError("tfmesos clusterspec message: cluster_z holds no {job: [host:port, ...]} mapping")
        return cluster

    def document(self) -> dict[str, Any]:
        """What the executor writes to the task's clusterspec.json (ValueError as ``cluster``)."""
        return {"type": self.KIND, "version": self.version, "cluster": self.cluster()}


@dataclass(frozen=True)
class NeedSpec:
    """Executor -> scheduler: no ClusterSpec yet (framework messages are best effort)."""

    KIND = "need_spec"
    task_id: str


@dataclass(frozen=True)
class OutputLines:
    """Executor -> scheduler: lines the streamed task printed."""

    KIND = "output"
    task_id: str
    lines: list[str]
    # Where the first line starts in OUTPUT_LOG: the scheduler reads a gap (messages lost) from
    # there. -1: unknown (an executor that keeps no OUTPUT_LOG).
    offset: int = -1


@dataclass(frozen=True)
class Progress:
    """Executor -> scheduler: the latest values the task gave tfmesos.report()."""

    KIND = "progress"
    task_id: str
    values: dict[str, Any]


@dataclass(frozen=True)
class TaskResult:
    """The data of the executor's terminal status update."""

    KIND = "result"
    exit_code: int | None
    log_tail: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    # The exception line of the Python traceback that ended the task (core/tensorflow/tracebacks.py), "" when
    # none. Optional: an older peer omits or ignores it.
    exception: str = ""


@dataclass(frozen=True)
class StopNotice:
    """Scheduler -> executor: a planned stop (docs/developers/architecture.md, "Planned stop: the
    notice"): the executor writes the task's notice file; a KILL that follows gives the SIGTERM.
    An older executor refuses the kind (logged) and its task goes on."""

    KIND = "stop_notice"
    task_id: str
    reason: str
    kind: str  # tfmesos.task.notice.KINDS; "": a plain stop, no notice (the KILL after it is the scheduler's)


Message = TaskPayload | ClusterSpecMessage | NeedSpec | OutputLines | Progress | TaskResult | StopNotice
_KINDS: dict[str, type] = {cls.KIND: cls for cls in (TaskPayload, ClusterSpecMessage, NeedSpec, OutputLines,
                                                     Progress, TaskResult, StopNotice)}


def to_wire(message: Message) -> dict[str, Any]:
    # Fields hold plain JSON values: no deep copy (asdict's copied a gang's ClusterSpec per task).
    return {"v": PROTOCOL, "type": message.KIND,
            **{f.name: getattr(message, f.name) for f in dataclasses.fields(message)}}


def from_wire(obj: Any, what: str = "the peer") -> Message:
    if not isinstance(obj, dict):
        raise ValueError(f"a tfmesos message must be a JSON object, not {type(obj).__name__}")
    if obj.get("v") != PROTOCOL:
        raise ProtocolMismatch(what, obj.get("v", "0 (before versioning)"))
    cls = _KINDS.get(obj.get("type"))  # type: ignore[arg-type]
    if cls is None:
        raise ValueError(f"unknown tfmesos message type {obj.get('type')!r}")
    names = {f.name for f in dataclasses.fields(cls)}
    missing = [f.name for f in dataclasses.fields(cls)
               if f.name not in obj and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    if missing:
        raise ValueError(f"tfmesos {cls.KIND} message lacks {', '.join(missing)}")
    return cls(**{k: v for k, v in obj.items() if k in names})


def encode(message: Message) -> str:
    """Base64 of compact JSON: what TaskInfo.data, framework messages and status data carry."""
    return base64.b64encode(json.dumps(to_wire(message), separators=(",", ":")).encode()).decode()


def decode(data: str, what: str = "the peer") -> Message:
    return from_wire(json.loads(base64.b64decode(data)), what)
