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

import binascii
import json
import zlib

# No typing and no dataclasses at run time: every executor imports this module cold. ``typing``
# costs each one ~4 ms and 0.6 MiB; ``dataclasses`` (with ``inspect``, ``ast``, ``dis`` and
# ``tokenize``) ~1.5 MiB and, with the classes it generates, 5-10 ms. So the messages are plain
# frozen records (``_Record``), and ``Message`` a plain union of the classes.
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


class _Record:
    """A frozen record, as ``dataclass(frozen=True)`` makes one: ``FIELDS`` are its wire fields in
    order (``__slots__``), set once by the class's ``__init__`` (whose parameters with a default
    are the optional ones: ``required``); equal and hashed by its fields; ``replace`` copies it
    with some changed. ``HIDDEN`` fields are left out of ``repr`` (secrets)."""

    __slots__ = ()
    KIND = ""
    FIELDS: tuple[str, ...] = ()
    HIDDEN: frozenset[str] = frozenset()

    def _set(self, *values: Any) -> None:
        for name, value in zip(self.FIELDS, values):
            object.__setattr__(self, name, value)

    @classmethod
    def required(cls) -> tuple[str, ...]:
        """The fields a message must carry: ``__init__``'s parameters without a default."""
        init = cls.__init__
        return cls.FIELDS[:init.__code__.co_argcount - 1 - len(init.__defaults__ or ())]

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.FIELDS)

    def replace(self, **changes: Any) -> Any:
        """A copy with ``changes`` (``dataclasses.replace``'s)."""
        return type(self)(**{**dict(zip(self.FIELDS, self._values())), **changes})

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: a {type(self).__name__} is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: a {type(self).__name__} is frozen")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __reduce__(self) -> tuple[Any, ...]:  # copy and pickle: __setattr__ refuses the slots' usual way
        return type(self), self._values()

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.FIELDS if name not in self.HIDDEN)
        return f"{type(self).__name__}({shown})"


class TaskPayload(_Record):
    """TaskInfo.data: what the executor needs to start the task's process."""

    KIND = "task"
    __slots__ = FIELDS = ("role", "index", "port", "restarts", "command", "env", "workdir", "checkpoint_dir", "python",
                          "service", "stream_output", "secret_env", "secret_files", "spec_version", "cluster_z")
    HIDDEN = frozenset({"secret_env", "secret_files"})
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
    secret_env: dict[str, str]
    secret_files: dict[str, str]
    # A small gang's ClusterSpec, as a ClusterSpecMessage holds it (core/job/cluster_spec_sync.py,
    # INLINE_MAX_ADDRESSES): the task starts at once. "": the executor asks for it (NeedSpec) and
    # the task starts when it arrives; a big gang's in every TaskInfo, which the master and each
    # agent parse and checkpoint, made its TaskInfo bytes grow with the square of its size.
    # Optional: a protocol 4 executor ignores them and asks, and is answered.
    spec_version: int
    cluster_z: str

    def __init__(self, role: str, index: int, port: int, restarts: int, command: str | None, env: dict[str, str],
                 workdir: str, checkpoint_dir: str, python: str, service: str, stream_output: bool,
                 secret_env: dict[str, str] | None = None, secret_files: dict[str, str] | None = None,
                 spec_version: int = 0, cluster_z: str = "") -> None:
        self._set(role, index, port, restarts, command, env, workdir, checkpoint_dir, python, service, stream_output,
                  {} if secret_env is None else secret_env, {} if secret_files is None else secret_files,
                  spec_version, cluster_z)

    def cluster_spec(self) -> ClusterSpecMessage | None:
        """The ClusterSpec it carries; None where it carries none."""
        return ClusterSpecMessage(self.spec_version, self.cluster_z) if self.cluster_z else None


class ClusterSpecMessage(_Record):
    """Scheduler -> executor: every task's address, a newer version replacing an older one. Sent
    once per executor and version, so compressed: a gang's addresses share hosts and port
    prefixes (1,000 workers: 20-30 kB of JSON, 3-5 kB deflated)."""

    KIND = "clusterspec"
    __slots__ = FIELDS = ("version", "cluster_z")
    version: int
    cluster_z: str  # base64 of the zlib-deflated compact JSON of {TF job name: [host:port, ...]}

    def __init__(self, version: int, cluster_z: str) -> None:
        self._set(version, cluster_z)

    @classmethod
    def of(cls, version: int, cluster: dict[str, list[str]]) -> ClusterSpecMessage:
        text = json.dumps(cluster, separators=(",", ":")).encode()
        return cls(version, _b64encode(zlib.compress(text, 6)))

    def cluster(self) -> dict[str, list[str]]:
        """The ClusterSpec; ValueError (naming it) where ``cluster_z`` is not one."""
        try:
            cluster = json.loads(zlib.decompress(_b64decode(self.cluster_z)))
        except (ValueError, zlib.error) as exc:
            raise ValueError(f"tfmesos clusterspec message: cluster_z is not a deflated ClusterSpec: {exc}") from None
        if not isinstance(cluster, dict) or not all(
                isinstance(v, list) and all(isinstance(a, str) for a in v) for v in cluster.values()):
            raise ValueError("tfmesos clusterspec message: cluster_z holds no {job: [host:port, ...]} mapping")
        return cluster

    def document(self) -> dict[str, Any]:
        """What the executor writes to the task's clusterspec.json (ValueError as ``cluster``)."""
        return {"type": self.KIND, "version": self.version, "cluster": self.cluster()}


class NeedSpec(_Record):
    """Executor -> scheduler: no ClusterSpec yet (framework messages are best effort)."""

    KIND = "need_spec"
    __slots__ = FIELDS = ("task_id",)
    task_id: str

    def __init__(self, task_id: str) -> None:
        self._set(task_id)


class OutputLines(_Record):
    """Executor -> scheduler: lines the streamed task printed."""

    KIND = "output"
    __slots__ = FIELDS = ("task_id", "lines", "offset")
    task_id: str
    lines: list[str]
    # Where the first line starts in OUTPUT_LOG: the scheduler reads a gap (messages lost) from
    # there. -1: unknown (an executor that keeps no OUTPUT_LOG).
    offset: int

    def __init__(self, task_id: str, lines: list[str], offset: int = -1) -> None:
        self._set(task_id, lines, offset)


class Progress(_Record):
    """Executor -> scheduler: the latest values the task gave tfmesos.report()."""

    KIND = "progress"
    __slots__ = FIELDS = ("task_id", "values")
    task_id: str
    values: dict[str, Any]

    def __init__(self, task_id: str, values: dict[str, Any]) -> None:
        self._set(task_id, values)


class TaskResult(_Record):
    """The data of the executor's terminal status update."""

    KIND = "result"
    __slots__ = FIELDS = ("exit_code", "log_tail", "extra", "exception")
    exit_code: int | None
    log_tail: str
    extra: dict[str, Any]
    # The exception line of the Python traceback that ended the task (core/tensorflow/tracebacks.py), "" when
    # none. Optional: an older peer omits or ignores it.
    exception: str

    def __init__(self, exit_code: int | None, log_tail: str = "", extra: dict[str, Any] | None = None,
                 exception: str = "") -> None:
        self._set(exit_code, log_tail, {} if extra is None else extra, exception)


class StopNotice(_Record):
    """Scheduler -> executor: a planned stop (docs/developers/architecture.md, "Planned stop: the
    notice"): the executor writes the task's notice file; a KILL that follows gives the SIGTERM.
    An older executor refuses the kind (logged) and its task goes on."""

    KIND = "stop_notice"
    __slots__ = FIELDS = ("task_id", "reason", "kind")
    task_id: str
    reason: str
    kind: str  # tfmesos.task.notice.KINDS; "": a plain stop, no notice (the KILL after it is the scheduler's)

    def __init__(self, task_id: str, reason: str, kind: str) -> None:
        self._set(task_id, reason, kind)


Message = TaskPayload | ClusterSpecMessage | NeedSpec | OutputLines | Progress | TaskResult | StopNotice
_KINDS: dict[str, type[_Record]] = {cls.KIND: cls for cls in (TaskPayload, ClusterSpecMessage, NeedSpec, OutputLines,
                                                     Progress, TaskResult, StopNotice)}


def to_wire(message: Message) -> dict[str, Any]:
    # Fields hold plain JSON values: no deep copy (asdict's copied a gang's ClusterSpec per task).
    return {"v": PROTOCOL, "type": message.KIND, **dict(zip(message.FIELDS, message._values()))}


def from_wire(obj: Any, what: str = "the peer") -> Message:
    if not isinstance(obj, dict):
        raise ValueError(f"a tfmesos message must be a JSON object, not {type(obj).__name__}")
    if obj.get("v") != PROTOCOL:
        raise ProtocolMismatch(what, obj.get("v", "0 (before versioning)"))
    cls = _KINDS.get(obj.get("type"))  # type: ignore[arg-type]
    if cls is None:
        raise ValueError(f"unknown tfmesos message type {obj.get('type')!r}")
    missing = [name for name in cls.required() if name not in obj]
    if missing:
        raise ValueError(f"tfmesos {cls.KIND} message lacks {', '.join(missing)}")
    return cls(**{name: obj[name] for name in cls.FIELDS if name in obj})


def _b64encode(data: bytes) -> str:
    return binascii.b2a_base64(data, newline=False).decode("ascii")


def _b64decode(data: str | bytes) -> bytes:
    """base64.b64decode's (non-alphabet characters skipped, bad padding a ValueError), without
    importing ``base64`` (and ``struct``) into every executor."""
    return binascii.a2b_base64(data)


def encode(message: Message) -> str:
    """Base64 of compact JSON: what TaskInfo.data, framework messages and status data carry."""
    return _b64encode(json.dumps(to_wire(message), separators=(",", ":")).encode())


def decode(data: str, what: str = "the peer") -> Message:
    return from_wire(json.loads(_b64decode(data)), what)
