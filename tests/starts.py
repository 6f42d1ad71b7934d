"""What a test starts, read from its source: the markers come from this (tests/conftest.py), not
from the folder a test sits in.

A test starts what its own body, the fixtures it asks for and every function, class or module-level
value of the test helpers it uses (same module, or imported from tests/) call: ``subprocess.run``
starts a process, ``socket.socket`` or an HTTP server opens a socket, ``LocalMaster`` an embedded
master, the ``zk`` fixture ZooKeeper, a ``"chromium"`` string the browser. tfmesos' own code is not
followed: its entry points that start things are listed in ``CALLS`` (``ApiServer``, ``cluster``...).
A module whose tests start something through code the reader does not follow (an agent's recovery
spawning a process, an executor run in the test's process) says so: ``STARTS = ("subprocess",)``.
"""
from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

TESTS = Path(__file__).resolve().parent
_SELF = Path(__file__).resolve()  # the reader is no helper: its tables name what it looks for

PROCESS, SOCKET, LOCALMASTER, ZOOKEEPER, CHROMIUM, TENSORFLOW = (
    "subprocess", "socket", "localmaster", "zookeeper", "chromium", "tensorflow")

_PROCESS_CALLS = [f"subprocess.{n}" for n in ("run", "Popen", "call", "check_call", "check_output", "getoutput",
                                                "getstatusoutput")] + [
    f"os.{n}" for n in ("fork", "forkpty", "system", "popen", "posix_spawn", "posix_spawnp", "execv", "execve",
                        "execvp", "execvpe", "execl", "execlp", "spawnv", "spawnve", "spawnl")] + [
    "multiprocessing.Process", "multiprocessing.Pool", "multiprocessing.get_context", "psutil.Popen", "pty.spawn",
    "asyncio.create_subprocess_exec", "asyncio.create_subprocess_shell"]
_SOCKET_CALLS = ["socket.socket", "socket.create_connection", "socket.create_server", "socket.socketpair",
                 "http.server.HTTPServer", "http.server.ThreadingHTTPServer", "socketserver.TCPServer",
                 "socketserver.ThreadingTCPServer", "http.client.HTTPConnection", "urllib.request.urlopen",
                 "requests.get", "requests.post", "kazoo.client.KazooClient",
                 # tfmesos' own entry points that listen or connect
                 "tfmesos.scheduler.http_api.ApiServer", "tfmesos.mesos.calls_http.CallConnection",
                 "tfmesos.mesos.calls_http.CallSender", "tfmesos.mesos.tcp.connect",
                 "tfmesos.mesos.scheduler_driver.SchedulerDriver",
                 "pymesos.MesosSchedulerDriver", "pymesos.MesosExecutorDriver"]
CALLS: dict[str, frozenset[str]] = {
    **{name: frozenset({PROCESS}) for name in _PROCESS_CALLS},
    **{name: frozenset({SOCKET}) for name in _SOCKET_CALLS},
    # the embedded master listens and its agents start executors
    "localmesos.LocalMaster": frozenset({LOCALMASTER, SOCKET, PROCESS}),
    "localmesos.local_master.LocalMaster": frozenset({LOCALMASTER, SOCKET, PROCESS}),
    # a whole job in this process: the embedded master, the scheduler, the tasks
    "tfmesos.cluster": frozenset({LOCALMASTER, SOCKET, PROCESS}),
    "tfmesos.client.cluster.cluster": frozenset({LOCALMASTER, SOCKET, PROCESS}),
    "tfmesos.client.cluster.open_cluster": frozenset({LOCALMASTER, SOCKET, PROCESS}),
    "tfmesos.scheduler.runner.run_job": frozenset({LOCALMASTER, SOCKET, PROCESS}),
    "tests.zookeeper.ZooKeeper": frozenset({ZOOKEEPER, SOCKET, PROCESS}),
    # in-process code that starts a task's process or reaches an agent (found by the runtime guard)
    "localmesos.agent.procs.spawn": frozenset({PROCESS}),
    "tfmesos.executor.executor.TFExecutor": frozenset({PROCESS}),
    "tfmesos.client.logs.kept_log": frozenset({SOCKET}),
    "localmesos.ports.free_port_block": frozenset({SOCKET}),  # binds each port to see that it is free
    "localmesos.local_master._agent_sockets": frozenset({SOCKET}),  # the agents' listening sockets
    "tfmesos.client.tfrun.main": frozenset({LOCALMASTER, SOCKET, PROCESS}),
    "tfmesos.client.tfrun.run": frozenset({LOCALMASTER, SOCKET, PROCESS}),
}
# Fixtures that are not functions of the suite (pytest's own start nothing).
FIXTURES: dict[str, frozenset[str]] = {"pytester": frozenset({PROCESS})}
# What makes a test more than a unit test: anything that starts.
NOT_UNIT = frozenset({PROCESS, SOCKET, LOCALMASTER, ZOOKEEPER, CHROMIUM, TENSORFLOW})


@dataclass(frozen=True)
class Found:
    kinds: frozenset[str]
    why: tuple[str, ...]  # e.g. "test_x -> helper -> subprocess.run"


class _Module:
    """One parsed test module: its top-level definitions and what its names stand for."""

    def __init__(self, path: Path):
        self.path = path
        self.tree = ast.parse(path.read_text(), str(path))
        self.defs: dict[str, ast.AST] = {}
        self.aliases: dict[str, str] = {}  # local name -> dotted name (module or module.attr)
        self.body: list[ast.stmt] = []  # module-level statements run at import
        for node in self.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.defs[node.name] = node
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    for name in ast.walk(t):
                        if isinstance(name, ast.Name):
                            self.defs[name.id] = node
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module is not None and not node.level:
                for a in node.names:
                    self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
            elif isinstance(node, ast.ImportFrom) and node.level:
                package = ".".join(self._dotted().split(".")[: -node.level])
                for a in node.names:
                    self.aliases[a.asname or a.name] = ".".join(p for p in (package, node.module or "", a.name) if p)

    def _dotted(self) -> str:
        return ".".join(self.path.relative_to(TESTS.parent).with_suffix("").parts)


@functools.lru_cache(maxsize=None)
def _module(path: Path) -> _Module:
    return _Module(path)


@functools.lru_cache(maxsize=None)
def _helper_path(dotted: str, near: Path) -> tuple[Path, str] | None:
    """(file, name in it) of a test helper ``dotted`` names: tests.a.b.NAME, or a module beside
    ``near`` (folders that put themselves on sys.path, as tests/localmesos does)."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module, name = parts[:cut], ".".join(parts[cut:])
        candidates = [TESTS.parent.joinpath(*module).with_suffix(".py")] if module[0] == "tests" else [
            near.parent.joinpath(*module).with_suffix(".py")]
        for path in candidates:
            if path.is_file():
                return path, name
    return None


def _dotted_of(node: ast.AST, module: _Module) -> str | None:
    if isinstance(node, ast.Name):
        return module.aliases.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        base = _dotted_of(node.value, module)
        return f"{base}.{node.attr}" if base else None
    return None


_DONE: dict[tuple[Path, str], Found] = {}  # definitions read to the end
_CUT = [0]  # how many times a cycle was cut short: what was read meanwhile is not complete, not kept


def _starts_of(path: Path, name: str, seen: set[tuple[Path, str]]) -> Found:
    """What running the definition ``name`` of ``path`` (a function, a class, a module value) starts."""
    key = (path, name)
    if key in _DONE:
        return _DONE[key]
    if key in seen:
        _CUT[0] += 1
        return Found(frozenset(), ())
    seen.add(key)
    module = _module(path)
    node = module.defs.get(name.split(".")[0])
    if node is None:
        return Found(frozenset(), ())
    cuts = _CUT[0]
    found = _starts_in(node, module, name, seen)
    seen.discard(key)
    if cuts == _CUT[0]:
        _DONE[key] = found
    return found


def _starts_in(node: ast.AST, module: _Module, label: str, seen: set[tuple[Path, str]]) -> Found:
    kinds: set[str] = set()
    why: list[str] = []

    def add(found: frozenset[str], how: str) -> None:
        if found - kinds:
            why.append(f"{label} -> {how}")
        kinds.update(found)

    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and "chromium" in sub.value:
            add(frozenset({CHROMIUM}), repr(sub.value))
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in sub.names] if isinstance(sub, ast.Import) else [sub.module or ""]
            if any(n.split(".")[0] == "tensorflow" for n in names):
                add(frozenset({TENSORFLOW}), "import tensorflow")
        elif isinstance(sub, (ast.Name, ast.Attribute)) and isinstance(getattr(sub, "ctx", None), ast.Load):
            dotted = _dotted_of(sub, module)
            if dotted is None:
                continue
            if dotted in CALLS:
                add(CALLS[dotted], dotted)
            elif isinstance(sub, ast.Name) and sub.id in module.defs and module.defs[sub.id] is not node:
                found = _starts_of(module.path, sub.id, seen)  # a helper of the same module
                if found.kinds:
                    add(found.kinds, found.why[0] if found.why else sub.id)
            elif dotted.startswith("tests.") or (isinstance(sub, ast.Name) and sub.id in module.aliases):
                helper = _helper_path(dotted, module.path)
                if helper is not None and helper[0] != module.path and helper[0] != _SELF:
                    found = _starts_of(helper[0], helper[1], seen)
                    if found.kinds:
                        add(found.kinds, found.why[0] if found.why else dotted)
    return Found(frozenset(kinds), tuple(why))


def _fixture_defs(path: Path) -> list[Path]:
    """Where a test in ``path`` finds its fixtures: the module, then each conftest up to tests/."""
    out = [path]
    folder = path.parent
    while True:
        if (folder / "conftest.py").is_file():
            out.append(folder / "conftest.py")
        if folder == TESTS or folder == folder.parent:
            return out
        folder = folder.parent


def _is_fixture(node: ast.AST) -> bool:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
        "fixture" in ast.unparse(d) for d in node.decorator_list)


@functools.lru_cache(maxsize=None)
def starts(path: Path, qualname: str, fixtures: tuple[str, ...] = ()) -> Found:
    """What the test ``qualname`` (``test_x`` or ``TestClass.test_x``) of ``path`` starts, through
    its body, its helpers and its fixtures (those it names and ``fixtures``, e.g. from pytest)."""
    seen: set[tuple[Path, str]] = set()
    module = _module(path)
    node = module.defs.get(qualname.split(".")[0])
    if node is None:
        return Found(frozenset(), ())
    if "." in qualname and isinstance(node, ast.ClassDef):
        node = next((n for n in node.body if getattr(n, "name", None) == qualname.split(".")[1]), node)
    found = _starts_in(node, module, qualname, seen)
    kinds, why = set(found.kinds), list(found.why)
    names = set(fixtures)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        names |= {a.arg for a in node.args.args}
    for fixture in sorted(names):
        if fixture in FIXTURES:
            kinds |= FIXTURES[fixture]
            why.append(f"{qualname} -> fixture {fixture}")
            continue
        for where in _fixture_defs(path):
            definition = _module(where).defs.get(fixture)
            if definition is not None and _is_fixture(definition):
                sub = _starts_of(where, fixture, seen)
                if sub.kinds - kinds:
                    why.append(f"{qualname} -> fixture " + (sub.why[0] if sub.why else fixture))
                kinds |= sub.kinds
                if fixture == "zk":
                    kinds.add(ZOOKEEPER)
                break
    declared = declared_starts(path)
    if declared:
        kinds |= declared
        why.append(f"{path.name} declares STARTS = {tuple(sorted(declared))}")
    # Module-level code runs for every test of the module (at import).
    for stmt in module.tree.body:
        if isinstance(stmt, ast.Expr) or (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call)):
            sub = _starts_in(stmt, module, f"{path.name} at import", seen)
            kinds |= sub.kinds
            why += list(sub.why)
    return Found(frozenset(kinds), tuple(why))


TIERS = ("unit", "protocol", "e2e", "chaos")
# Folders whose tests are whole jobs (real TensorFlow through tfmesos run): that is their tier,
# whatever else they start.
FOLDER_TIERS = {"e2e": "e2e", "chaos": "chaos"}


def tier(found: Found, folder: str) -> str:
    """unit: starts nothing (no process, no socket); protocol: starts processes or sockets (the
    embedded master, an HTTP server, a tfmesos command), no TensorFlow job; e2e/chaos: by folder,
    or TensorFlow imported by the test itself."""
    if folder in FOLDER_TIERS:
        return FOLDER_TIERS[folder]
    if TENSORFLOW in found.kinds:
        return "e2e"
    return "protocol" if found.kinds & NOT_UNIT else "unit"


KINDS = frozenset({PROCESS, SOCKET, LOCALMASTER, ZOOKEEPER, CHROMIUM, TENSORFLOW})


def declared_starts(path: Path) -> frozenset[str]:
    """The module's ``STARTS = (...)``: what its tests start through code the reader does not follow."""
    for stmt in _module(path).tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "STARTS" for t in stmt.targets):
            value = ast.literal_eval(stmt.value)
            unknown = set(value) - KINDS
            if unknown:
                raise ValueError(f"{path}: STARTS names {sorted(unknown)}: expected some of {sorted(KINDS)}")
            return frozenset(value)
    return frozenset()


def declared_tiers(path: Path, qualname: str) -> set[str]:
    """The tier markers written on a test (decorators, its class's, the module's ``pytestmark``)."""
    module = _module(path)

    def marks(decorators: list[ast.expr]) -> set[str]:
        text = " ".join(ast.unparse(d) for d in decorators)
        return {t for t in TIERS if f"mark.{t}" in text}

    found: set[str] = set()
    for stmt in module.tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in stmt.targets):
            found |= marks([stmt.value])
    node = module.defs.get(qualname.split(".")[0])
    if isinstance(node, ast.ClassDef):
        found |= marks(node.decorator_list)
        node = next((n for n in node.body if getattr(n, "name", None) == qualname.split(".")[-1]), None)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        found |= marks(node.decorator_list)
    return found


def test_functions(path: Path) -> list[str]:
    """The qualnames of the tests pytest would collect from ``path`` (test_* and Test*.test_*)."""
    out = []
    for node in _module(path).tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            out.append(node.name)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            out += [f"{node.name}.{n.name}" for n in node.body
                    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test")]
    return out


def unit_conflict(found: Found, declared: set[str]) -> str | None:
    """Why a test declared ``unit`` is not one (None when it is, or is not declared unit)."""
    if "unit" not in declared or not found.kinds & NOT_UNIT:
        return None
    return (f"marked unit but starts {', '.join(sorted(found.kinds & NOT_UNIT))} ({'; '.join(found.why[:3])}): "
            "unit means no process and no socket; drop the mark (the tier is derived) or stop starting it")
