"""pymesos' private parts are used in one place: ``tfmesos/mesos/pymesos_driver.py`` (its
``Pymesos`` class), for ``--driver pymesos``. A pymesos upgrade is then checked there and nowhere
else (tfmesos' own drivers, ``scheduler_driver.py`` and ``executor_driver.py``, use none).

The private names are read from pymesos' own source (every ``_name`` its modules and classes
define or set on ``self``, and ``stream_id``, which it sets as a plain attribute but is its
connection's business); a module outside the adapters that reads or writes one on anything but
an object of its own class is named here."""
from __future__ import annotations

import ast
import functools
from pathlib import Path

import pymesos
import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "tfmesos"
ADAPTERS = {PACKAGE / "mesos" / "pymesos_driver.py"}
UNPREFIXED_INTERNALS = {"stream_id"}  # pymesos state without a leading underscore


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


@functools.lru_cache(maxsize=None)
def pymesos_private_names() -> frozenset[str]:
    names = set(UNPREFIXED_INTERNALS)
    for path in Path(pymesos.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and _private(node.name):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and _private(node.id):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _private(node.attr):
                names.add(node.attr)  # self._conn = ..., self._timeout = ...
    return frozenset(names)


def _own_names(cls: ast.ClassDef) -> set[str]:
    """What a class defines itself: its methods and class attributes, and what it sets on self."""
    own = set()
    for node in ast.walk(cls):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            own.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and \
                isinstance(node.value, ast.Name) and node.value.id == "self":
            own.add(node.attr)
    own |= {t.id for node in cls.body if isinstance(node, (ast.Assign, ast.AnnAssign))
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(t, ast.Name)}
    return own


def private_uses(source: str, private: frozenset[str], filename: str = "<source>") -> list[str]:
    """``line: expression`` for each private pymesos attribute a module reads or writes. An
    attribute on ``self`` that the enclosing class defines itself is its own (``self._send`` of a
    class with a ``_send``), unless the class derives from something imported from pymesos."""
    tree = ast.parse(source, filename)
    from_pymesos = {alias.asname or alias.name.split(".")[0] for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pymesos")
                    for alias in node.names}
    found: list[str] = []

    def visit(node: ast.AST, own: set[str]) -> None:
        if isinstance(node, ast.ClassDef):
            bases = {ast.unparse(b).split(".")[0] for b in node.bases}
            own = set() if bases & (from_pymesos | {"pymesos"}) else _own_names(node)
        if isinstance(node, ast.Attribute) and node.attr in private:
            on_self = isinstance(node.value, ast.Name) and node.value.id == "self"
            if not (on_self and node.attr in own):
                found.append(f"{filename}:{node.lineno}: {ast.unparse(node)}")
        for child in ast.iter_child_nodes(node):
            visit(child, own)

    visit(tree, set())
    return found


def test_pymesos_private_names_are_read_from_its_source() -> None:
    names = pymesos_private_names()
    # What tfmesos' adapters override or read today: a pymesos without them changes the adapters.
    assert {"_get_conn", "_conn", "_timeout", "_basic_credential", "_framework", "_send", "_prev_handler",
            "stream_id"} <= names


def test_the_check_names_what_reaches_into_pymesos() -> None:
    private = pymesos_private_names()
    source = '''
from pymesos import MesosSchedulerDriver
import pymesos.process


class Driver(MesosSchedulerDriver):
    def _get_conn(self):
        return self._conn


class Connection:
    def __init__(self):
        self._conn = None

    def _send(self, data):
        return self._conn, self._send


def tame(driver):
    driver._conn = None
    pymesos.process._prev_handler = None
    return driver.stream_id
'''
    found = [f.split(": ", 1)[1] for f in private_uses(source, private)]
    assert found == ["self._conn", "driver._conn", "pymesos.process._prev_handler", "driver.stream_id"], found


@pytest.mark.parametrize("module", sorted(set(PACKAGE.rglob("*.py")) - ADAPTERS),
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_outside_the_adapters_names_a_private_pymesos_attribute(module: Path) -> None:
    found = private_uses(module.read_text(), pymesos_private_names(), str(module.relative_to(PACKAGE.parent)))
    assert not found, "private pymesos attributes outside tfmesos/mesos/pymesos_driver.py's Pymesos:\n" + "\n".join(found)


def test_the_adapters_are_where_the_private_uses_are() -> None:
    """The check sees the adapters' uses (it would see them anywhere else)."""
    driver = PACKAGE / "mesos" / "pymesos_driver.py"
    found = private_uses(driver.read_text(), pymesos_private_names(), "pymesos_driver.py")
    assert any("_basic_credential" in f for f in found) and any("_prev_handler" in f for f in found), found


def test_the_adapter_answers_every_callback_pymesos_makes() -> None:
    """pymesos calls ``self.sched.<callback>(...)`` for each event; one the adapter lacks is an
    AttributeError on pymesos' IO thread, which ends the driver (RESCIND_INVERSE_OFFER did)."""
    from tfmesos.mesos.driver import MesosAdapter

    source = (Path(pymesos.__file__).parent / "scheduler.py").read_text()
    called = {node.attr for node in ast.walk(ast.parse(source))
              if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
              and node.value.attr == "sched" and isinstance(node.ctx, ast.Load)}
    assert {"statusUpdate", "inverseOfferRescinded"} <= called, called
    assert sorted(name for name in called if not callable(getattr(MesosAdapter, name, None))) == []
