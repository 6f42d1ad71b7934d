"""The layering docs/developers/ describes, checked on the source and followed transitively through
tfmesos' and localmesos' own modules: a rule on a folder holds for everything its modules import,
directly or through another module (``core -> spec -> options`` breaks "the core imports nothing
of options" as surely as ``core -> options`` does).

What counts as an import: every ``import``/``from ... import`` in a module, at its top or inside a
function (a lazy import runs when that code does), except under ``if TYPE_CHECKING:``. Importing
``a.b.c`` also runs the packages ``a`` and ``a.b``: a package's top-level imports count, not the
lazy ones in its functions (``tfmesos/__init__``'s ``__getattr__`` loads ``cluster`` only when a
script asks for ``tfmesos.cluster``, not when the executor imports ``tfmesos.executor``).

Circles: no two modules may import each other, directly or around a loop (a strongly connected
component of more than one module). The same imports count, lazy ones included, with one edge
left out: ``a.b`` running its package ``a`` first is no dependency of ``a.b`` on ``a``, so a
package that re-exports its modules makes no circle with them (``a.b`` importing a name that
``a/__init__`` defines is an import like any other, and counts).
"""
from __future__ import annotations

import ast
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import pytest

ROOT = Path(__file__).resolve().parents[1]
OWN = ("tfmesos", "localmesos")  # the packages whose modules are followed
# Modules that would give the core I/O, a clock, threads or logging: decisions must not depend on them.
IMPURE = {"os", "io", "sys", "time", "datetime", "socket", "threading", "asyncio", "subprocess",
          "logging", "signal", "select", "shutil", "tempfile", "pathlib", "urllib", "http", "requests",
          "kazoo", "pymesos", "multiprocessing", "concurrent"}


@dataclass(frozen=True)
class Module:
    name: str
    is_package: bool
    imports: frozenset[str]  # every import, lazy ones included (dotted, absolute)
    top_imports: frozenset[str]  # only the module-level ones: what importing it runs
    wire_text: bool = False  # reads Mesos JSON ids (``["value"]``)


Graph = dict[str, Module]


def _absolute(module: str, is_package: bool, level: int, name: str) -> str:
    if not level:
        return name
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def parse_module(name: str, source: str, is_package: bool) -> Module:
    every: set[str] = set()
    top: set[str] = set()

    def visit(node: ast.AST, at_top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for sub in child.orelse:
                    visit_one(sub, at_top)
                continue
            visit_one(child, at_top)

    def visit_one(child: ast.AST, at_top: bool) -> None:
        found: list[str] = []
        if isinstance(child, ast.Import):
            found = [alias.name for alias in child.names]
        elif isinstance(child, ast.ImportFrom):
            base = _absolute(name, is_package, child.level, child.module or "")
            # ``from pkg import mod`` imports the module pkg.mod when there is one (resolved later).
            found = [base] + [f"{base}.{alias.name}" for alias in child.names if alias.name != "*"]
        every.update(found)
        if at_top:
            top.update(found)
        inner = at_top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        visit(child, inner)

    tree = ast.parse(source)
    visit(tree, True)
    return Module(name, is_package, frozenset(every), frozenset(top), '["value"]' in source)


def build_graph(root: Path, packages: Iterable[str] = OWN) -> Graph:
    graph: Graph = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            name = ".".join(parts[:-1] if is_package else parts)
            graph[name] = parse_module(name, path.read_text(), is_package)
    return graph


def _resolve(graph: Graph, dotted: str) -> str | None:
    """The module an import name lands on: ``a.b.NAME`` is ``a.b`` when NAME is not a module."""
    parts = dotted.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in graph:
            return candidate
        parts.pop()
    return None


def _edges(graph: Graph, name: str, packages: bool = True) -> set[str]:
    """Own modules that importing ``name`` and running its code imports directly (``packages``:
    with the packages above it, which Python runs first)."""
    out: set[str] = set()
    module = graph[name]
    for dotted in module.top_imports if module.is_package else module.imports:
        target = _resolve(graph, dotted)
        if target is None or target == name:
            continue
        out.add(target)
    if not packages:
        return out
    # Importing a.b.c runs the packages a and a.b first: each is a module of the graph, whose
    # edges are its top-level imports (above).
    parts = name.split(".")
    out.update(p for i in range(1, len(parts)) if (p := ".".join(parts[:i])) in graph)
    return out


Edge = tuple[str, str]


def reached(graph: Graph, start: str, skip: frozenset[Edge] = frozenset()) -> dict[str, str | None]:
    """Every own module ``start`` imports, directly or not, each with the module it came through
    (``skip``: edges left out, the known breaks a rule reports apart)."""
    came_from: dict[str, str | None] = {start: None}
    todo = deque([start])
    while todo:
        name = todo.popleft()
        for target in sorted(_edges(graph, name)):
            if target not in came_from and (name, target) not in skip:
                came_from[target] = name
                todo.append(target)
    return came_from


def chain(came_from: dict[str, str | None], end: str) -> str:
    names = [end]
    while (prev := came_from[names[-1]]) is not None:
        names.append(prev)
    return " -> ".join(reversed(names))


def cycles(graph: Graph) -> list[list[str]]:
    """The circles of the graph: each strongly connected component of more than one module, its
    modules sorted (Tarjan's algorithm, iterative: no recursion limit on a long chain)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(_edges(graph, root, packages=False))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            name, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(_edges(graph, target, packages=False)))))
                elif target in on_stack:
                    low[name] = min(low[name], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[name])
            if low[name] == index[name]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == name:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def cycle_lines(graph: Graph, component: list[str]) -> str:
    """A circle as its modules and the imports between them that close it."""
    inside = set(component)
    edges = [f"{a} -> {b}" for a in component for b in sorted(_edges(graph, a, packages=False)) if b in inside]
    return ", ".join(component) + ":\n      " + "\n      ".join(edges)


def external(graph: Graph, module: str) -> set[str]:
    """Top-level names of what ``module`` imports from outside the own packages (stdlib, third party)."""
    return {d.split(".")[0] for d in graph[module].imports if d.split(".")[0] not in OWN and d}


def broken(graph: Graph, folder: str, forbidden: Callable[[str], bool], allowed_external: Callable[[str], bool]
           = lambda _: True, skip: frozenset[Edge] = frozenset()) -> list[str]:
    """For every module under ``folder``: the chains to an own module it may not reach, and the
    outside imports of what it reaches that it may not have."""
    problems: list[str] = []
    for start in sorted(n for n in graph if n == folder or n.startswith(folder + ".")):
        came_from = reached(graph, start, skip)
        problems += [chain(came_from, n) for n in sorted(came_from) if forbidden(n)]
        problems += [f"{chain(came_from, n)} imports {x}" for n in sorted(came_from)
                     for x in sorted(external(graph, n)) if not allowed_external(x)]
    return problems


def under(*prefixes: str) -> Callable[[str], bool]:
    return lambda name: any(name == p or name.startswith(p + ".") for p in prefixes)


# ---------------------------------------------------------------- the rules, one per folder
# Package __init__ modules that only hold a docstring (and tfmesos' lazy __getattr__): running them is no dependency.
_INITS = {"tfmesos", "tfmesos.core", "tfmesos.core.job", "tfmesos.core.state", "tfmesos.core.placement",
          "tfmesos.core.tensorflow", "tfmesos.task", "tfmesos.executor", "tfmesos.mesos", "tfmesos.options",
          "tfmesos.store", "tfmesos.api"}
LOCALMESOS_ENTRY_POINTS = {"localmesos", "localmesos.cli", "localmesos.config", "localmesos.ports",
                           "localmesos.local_master", "localmesos.resources", "localmesos.roles", "localmesos.ids",
                           "localmesos.durations"}  # its own top level, as localmesos/__init__'s map names it

RULES: dict[str, tuple[str, Callable[[str], bool], Callable[[str], bool]]] = {
    # the rule's name: (folder, own modules it may not reach, outside imports it may have)
    "the core is pure: nothing of tfmesos outside the core, no I/O, clock, threads or logging": (
        "tfmesos.core", lambda n: not (under("tfmesos.core")(n) or n in _INITS), lambda x: x not in IMPURE),
    "the core reads no Mesos wire (json: tfmesos.mesos parses it)": (
        "tfmesos.core", under("tfmesos.mesos"), lambda x: x != "json"),
    "tfmesos.report (task/report.py, what training scripts import) imports nothing of tfmesos but itself": (
        "tfmesos.task.report", lambda n: n not in ("tfmesos.task.report", "tfmesos", "tfmesos.task"),
        lambda _: True),
    "the executor side imports nothing of the scheduler, the client or options": (
        "tfmesos.executor", under("tfmesos.scheduler", "tfmesos.client", "tfmesos.options", "localmesos"),
        lambda _: True),
    "localmesos imports nothing of tfmesos": ("localmesos", under("tfmesos"), lambda _: True),
    "options (options -> JobSpec) import only the core's plain data and errors": (
        "tfmesos.options", under("tfmesos.mesos", "tfmesos.scheduler", "tfmesos.client", "tfmesos.store",
                                 "tfmesos.executor", "tfmesos.api", "localmesos"), lambda _: True),
    # (the job store compares options without their defaults for resume: options are plain data too)
    "the store imports nothing of the wire, the scheduler, the client or the executor": (
        "tfmesos.store", under("tfmesos.mesos", "tfmesos.scheduler", "tfmesos.client", "tfmesos.executor",
                               "localmesos"), lambda _: True),
    "the API contract imports nothing that serves, runs or parses options": (
        "tfmesos.api", under("tfmesos.mesos", "tfmesos.scheduler", "tfmesos.client", "tfmesos.options",
                             "tfmesos.executor", "tfmesos.store", "localmesos"), lambda _: True),
    "the wire (tfmesos.mesos) imports nothing of the scheduler, the client or options": (
        "tfmesos.mesos", under("tfmesos.scheduler", "tfmesos.client", "tfmesos.options", "localmesos"),
        lambda _: True),
    "the scheduler never imports the client": ("tfmesos.scheduler", under("tfmesos.client"), lambda _: True),
}


def localmesos_internals_reached_directly(graph: Graph) -> list[str]:
    """tfmesos enters localmesos only through its documented entry points (its top level), never
    its http/, master/ or agent/ folders: this one is about the edge that crosses, not transitive."""
    return [f"{name} -> {target}" for name in sorted(n for n in graph if under("tfmesos")(n))
            for target in sorted(_edges(graph, name))
            if under("localmesos")(target) and target not in LOCALMESOS_ENTRY_POINTS]


GRAPH = build_graph(ROOT)

# Known breaks, each a real layering problem reported rather than a rule weakened: (the modules
# under a folder, the module they may not import). Every rule is checked with these edges left out
# (so a new path to the same place still fails), and each must still exist (a fixed one leaves the
# list, or the list would hide the next).
KNOWN_BREAKS: dict[tuple[str, str], str] = {
}
SKIP = frozenset((a, b) for a in GRAPH for (folder, b) in KNOWN_BREAKS if under(folder)(a) and b in _edges(GRAPH, a))


@pytest.mark.parametrize("rule", sorted(RULES))
def test_rule_holds_transitively(rule: str) -> None:
    folder, forbidden, allowed = RULES[rule]
    assert any(under(folder)(n) for n in GRAPH), f"{folder}: no such modules (moved? update the rule)"
    problems = broken(GRAPH, folder, forbidden, allowed, SKIP)
    assert not problems, f"{rule}:\n  " + "\n  ".join(problems)


def test_tfmesos_enters_localmesos_only_through_its_entry_points() -> None:
    found = set(localmesos_internals_reached_directly(GRAPH))
    known = {f"{a} -> {b}" for a, b in SKIP}
    assert found - known == set(), "tfmesos reaches into localmesos' internals: " + ", ".join(sorted(found - known))


def test_every_known_break_is_still_there() -> None:
    fixed = [f"{folder} -> {target}" for folder, target in KNOWN_BREAKS
             if not any(a for a, b in SKIP if b == target and under(folder)(a))]
    assert not fixed, f"fixed (well done): remove from KNOWN_BREAKS: {fixed}"


def test_no_import_circles() -> None:
    found = cycles(GRAPH)
    assert not found, (f"{len(found)} import circle(s) (lazy imports count): move what both sides need into a "
                       "module of its own below them, or pass it in:\n  " + "\n  ".join(cycle_lines(GRAPH, c) for c in found))


# The core's layers: its plain data at its top (spec, task_key, task_state, phase, actions, status,
# secrets, profile) imports none of its subpackages, so the job's data names no framework (the
# spec is given its profile); each subpackage may import the ones listed, and the plain data.
CORE_LAYERS: dict[str, tuple[str, ...]] = {
    "tfmesos.core.tensorflow": (),  # TensorFlow's rules and texts: a leaf beside placement
    "tfmesos.core.placement": (),  # offers, matching, fit, queue, quota, the offer hold and interest
    "tfmesos.core.state": ("tfmesos.core.placement",),  # the job's state, each field with its one writer
    "tfmesos.core.job": ("tfmesos.core.placement", "tfmesos.core.state"),  # the decisions, the Job facade
}


def core_layering(graph: Graph) -> list[str]:
    """The chains by which a module of the core reaches a core subpackage its layer may not."""
    problems: list[str] = []
    for start in sorted(n for n in graph if under("tfmesos.core")(n) and n not in _INITS):
        layer = next((s for s in CORE_LAYERS if under(s)(start)), None)  # None: the plain data at the top
        allowed = (layer, *CORE_LAYERS[layer]) if layer else ()
        forbidden = [s for s in CORE_LAYERS if s not in allowed]
        came_from = reached(graph, start)
        problems += [chain(came_from, n) for n in sorted(came_from) if n not in _INITS and under(*forbidden)(n)]
    return problems


def test_the_core_s_layers_hold_transitively() -> None:
    assert all(any(under(s)(n) for n in GRAPH) for s in CORE_LAYERS), "a core subpackage moved? update CORE_LAYERS"
    problems = core_layering(GRAPH)
    assert not problems, "the core's layers (CORE_LAYERS):\n  " + "\n  ".join(problems)


def test_a_core_layer_break_is_found_two_modules_away(tmp_path: Path) -> None:
    graph = _synthetic(tmp_path, {
        "tfmesos/__init__.py": "", "tfmesos/core/__init__.py": "",
        "tfmesos/core/spec.py": "from .profile import FrameworkProfile\n",
        "tfmesos/core/profile.py": "def default():\n    from .tensorflow.profile import TENSORFLOW\n",  # lazy: counts
        "tfmesos/core/tensorflow/__init__.py": "", "tfmesos/core/tensorflow/profile.py": "",
        "tfmesos/core/placement/__init__.py": "", "tfmesos/core/placement/fit.py": "from ..state import record\n",
        "tfmesos/core/state/__init__.py": "", "tfmesos/core/state/record.py": "from ..placement import offers\n",
        "tfmesos/core/placement/offers.py": "",
        "tfmesos/core/job/__init__.py": "", "tfmesos/core/job/gang.py": "from ..placement import fit\n",
    })
    found = core_layering(graph)
    assert "tfmesos.core.spec -> tfmesos.core.profile -> tfmesos.core.tensorflow.profile" in found
    assert "tfmesos.core.placement.fit -> tfmesos.core.state.record" in found  # placement is below state
    assert not any(p.startswith("tfmesos.core.state.record") for p in found), "state may use placement"
    assert not any(p.startswith("tfmesos.core.job.gang ->") and p.endswith("fit") for p in found)


def test_no_core_module_reads_mesos_json_ids() -> None:
    wire = [n for n in GRAPH if under("tfmesos.core")(n) and GRAPH[n].wire_text]
    assert not wire, f"{wire} read Mesos JSON ids: parse in tfmesos/mesos"


# ---------------------------------------------------------------- the checker can fail
def _synthetic(tmp_path: Path, files: dict[str, str]) -> Graph:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return build_graph(tmp_path, ["tfmesos", "localmesos"])


def test_a_break_two_modules_away_is_found_with_its_chain(tmp_path: Path) -> None:
    graph = _synthetic(tmp_path, {
        "tfmesos/__init__.py": "def __getattr__(name):\n    from .client import cluster\n",
        "tfmesos/core/__init__.py": "",
        "tfmesos/core/job.py": "from .spec import JobSpec\n",
        "tfmesos/core/spec.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import os\n"
                                "def build():\n    from ..options.load import load\n",
        "tfmesos/options/__init__.py": "",
        "tfmesos/options/load.py": "import json\n",
        "tfmesos/client/__init__.py": "", "tfmesos/client/cluster.py": "import socket\n",
    })
    folder, forbidden, allowed = RULES["the core is pure: nothing of tfmesos outside the core, no I/O, clock, "
                                       "threads or logging"]
    problems = broken(graph, folder, forbidden, allowed)
    # A lazy import counts, a TYPE_CHECKING one does not, tfmesos' lazy __getattr__ is not run.
    assert "tfmesos.core.job -> tfmesos.core.spec -> tfmesos.options.load" in problems
    assert not any("os" in p.split() or "client" in p for p in problems), problems


def test_impure_imports_are_found_through_another_core_module(tmp_path: Path) -> None:
    graph = _synthetic(tmp_path, {
        "tfmesos/__init__.py": "", "tfmesos/core/__init__.py": "",
        "tfmesos/core/a.py": "from . import b\n", "tfmesos/core/b.py": "import time\n",
    })
    folder, forbidden, allowed = RULES["the core is pure: nothing of tfmesos outside the core, no I/O, clock, "
                                       "threads or logging"]
    assert broken(graph, folder, forbidden, allowed) == ["tfmesos.core.a -> tfmesos.core.b imports time",
                                                        "tfmesos.core.b imports time"]


def test_a_package_init_runs_for_its_modules_and_an_internal_edge_is_named(tmp_path: Path) -> None:
    graph = _synthetic(tmp_path, {
        "tfmesos/__init__.py": "", "tfmesos/client/__init__.py": "", "tfmesos/client/x.py": "import localmesos.ports\n",
        "localmesos/__init__.py": "from .agent import sandbox\n", "localmesos/ports.py": "",
        "localmesos/agent/__init__.py": "", "localmesos/agent/sandbox.py": "import tfmesos.client.x\n",
    })
    assert localmesos_internals_reached_directly(graph) == []  # x enters through an entry point...
    came_from = reached(graph, "tfmesos.client.x")  # ...which runs localmesos/__init__ and what it imports
    assert chain(came_from, "localmesos.agent.sandbox") == ("tfmesos.client.x -> localmesos.ports -> localmesos "
                                                                 "-> localmesos.agent.sandbox")
    problems = broken(graph, "localmesos", under("tfmesos"))
    assert "localmesos.ports -> localmesos -> localmesos.agent.sandbox -> tfmesos.client.x" in problems
    # A known edge left out hides only its own path: the same place reached another way still fails.
    assert "localmesos.agent.sandbox -> tfmesos.client.x" in broken(
        graph, "localmesos", under("tfmesos"), skip=frozenset({("localmesos.ports", "localmesos")}))


def test_a_circle_through_a_lazy_import_is_found_and_a_package_s_re_export_is_none(tmp_path: Path) -> None:
    graph = _synthetic(tmp_path, {
        # A lazy re-export (__getattr__) and an eager one: neither makes a circle with the package's modules.
        "tfmesos/__init__.py": "def __getattr__(name):\n    from .client import cluster\n",
        "tfmesos/client/__init__.py": "from .cluster import cluster\n",
        "tfmesos/client/cluster.py": "import tfmesos.core.job\n",
        "tfmesos/core/__init__.py": "",
        "tfmesos/core/job.py": "from .spec import JobSpec\n",
        "tfmesos/core/spec.py": "def profile():\n    from .tf_profile import TENSORFLOW\n",  # lazy: it counts
        "tfmesos/core/tf_profile.py": "from . import spec\n",
        # A TYPE_CHECKING import is no circle.
        "tfmesos/core/status.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .job import Job\n",
        "tfmesos/core/queue.py": "from .status import Snapshot\n",
        "localmesos/__init__.py": "",
    })
    assert cycles(graph) == [["tfmesos.core.spec", "tfmesos.core.tf_profile"]]
    assert cycle_lines(graph, cycles(graph)[0]).splitlines()[1:] == [
        "      tfmesos.core.spec -> tfmesos.core.tf_profile", "      tfmesos.core.tf_profile -> tfmesos.core.spec"]


def test_a_longer_circle_is_one_component_with_every_edge_named(tmp_path: Path) -> None:
    graph = _synthetic(tmp_path, {
        "tfmesos/__init__.py": "", "tfmesos/scheduler/__init__.py": "",
        "tfmesos/scheduler/session.py": "from .embedded import start\n",
        "tfmesos/scheduler/embedded.py": "def start():\n    from .child_master import ChildMaster\n",
        "tfmesos/scheduler/child_master.py": "from .session import RunSettings\nfrom . import embedded\n",
        "tfmesos/scheduler/runner.py": "from .session import Session\n",  # reaches the circle, is not in it
        "localmesos/__init__.py": "",
    })
    (component,) = cycles(graph)
    assert component == ["tfmesos.scheduler.child_master", "tfmesos.scheduler.embedded", "tfmesos.scheduler.session"]
    assert "tfmesos.scheduler.child_master -> tfmesos.scheduler.embedded" in cycle_lines(graph, component)
