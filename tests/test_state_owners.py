"""Every piece of the job's state has one owner: each field of the records in ``tfmesos/core/state``
(and of the offer hold and interest they hold) names the core module that writes it
(``owned(...)`` on the field, or ``OWNER`` for a record of one writer), and no other module of
tfmesos writes it. Everyone else asks the owner: a function there (``tasks.launch``,
``phase.move``, ``offer_hold.take``), or, outside the core, the ``Job``'s questions.

What counts as a write, found on the source (an AST walk, as tests/test_import_boundaries.py
does for imports): an assignment, augmented assignment or ``del`` whose target is the field
(``rec.state = ...``, ``job.launch_seq += 1``, ``a.phase, b.cause = ...``), or an item of it
(``job.by_task_id[tid] = key``); a call of a mutating method on it (``tr.hold.held.clear()``,
``job.events.append(...)``); ``setattr(x, "field", ...)``. Fields are found by name, whatever the
object: ``self.x`` inside a class of its own (not a state record) is that class's attribute, not
a field. A write through an alias (``held = tr.hold.held; held.clear()``) is not seen: the owners
do not write that way.
"""
from __future__ import annotations

import ast
import dataclasses
from dataclasses import dataclass
from pathlib import Path

from tfmesos.core.placement.offer_hold import OfferHold
from tfmesos.core.placement.offer_interest import OfferInterest
from tfmesos.core.state.record import JobState, Transient
from tfmesos.core.state.series import ProgressSeries
from tfmesos.core.state.tasks import TaskRecord

ROOT = Path(__file__).resolve().parents[1]
RECORDS = (JobState, Transient, TaskRecord, OfferHold, OfferInterest, ProgressSeries)
MUTATORS = frozenset({"append", "extend", "insert", "remove", "pop", "popitem", "clear", "update", "setdefault",
                      "add", "discard", "difference_update", "intersection_update", "symmetric_difference_update",
                      "sort", "reverse", "__setitem__", "__delitem__"})


def owners() -> dict[str, str]:
    """Field name -> the file of the module that owns it, from the records' declarations."""
    found: dict[str, set[str]] = {}
    for record in RECORDS:
        for f in dataclasses.fields(record):
            owner = f.metadata.get("owner") or getattr(record, "OWNER", None)
            assert owner, f"{record.__name__}.{f.name} names no owner: give it owned(...) (or the class an OWNER)"
            found.setdefault(f.name, set()).add("tfmesos/core/" + owner.replace(".", "/") + ".py")
    clash = {name: sorted(files) for name, files in found.items() if len(files) > 1}
    assert not clash, f"one name, several owners (rename one, or this check cannot tell them apart): {clash}"
    return {name: files.pop() for name, files in found.items()}


@dataclass(frozen=True)
class Write:
    line: int
    field: str
    how: str


def _field_of(node: ast.AST) -> ast.Attribute | None:
    """The attribute a target writes: itself, or the one an item (``x.f[k][j]``) is taken from."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return node if isinstance(node, ast.Attribute) else None


def writes(source: str, fields: set[str], records: set[str]) -> list[Write]:
    """Every write of a field named in ``fields``; ``records``: the classes whose ``self.f`` are fields."""
    found: list[Write] = []

    def seen(attr: ast.Attribute | None, line: int, how: str, in_class: str | None) -> None:
        if attr is None or attr.attr not in fields:
            return
        if isinstance(attr.value, ast.Name) and attr.value.id == "self" and in_class not in records:
            return  # a class's own attribute of the same name
        found.append(Write(line, attr.attr, how))

    def targets(node: ast.AST) -> list[ast.AST]:
        if isinstance(node, (ast.Tuple, ast.List)):
            return [t for elt in node.elts for t in targets(elt)]
        if isinstance(node, ast.Starred):
            return targets(node.value)
        return [node]

    def visit(node: ast.AST, in_class: str | None) -> None:
        if isinstance(node, ast.ClassDef):
            in_class = node.name
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete, ast.For, ast.AsyncFor)):
            how = type(node).__name__.lower()
            raw = (node.targets if isinstance(node, (ast.Assign, ast.Delete))
                   else [node.target])
            for target in (t for r in raw for t in targets(r)):
                seen(_field_of(target), node.lineno, how, in_class)
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in MUTATORS:
                seen(_field_of(func.value), node.lineno, f".{func.attr}()", in_class)
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in ("setattr", "__setattr__") and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                    and node.args[1].value in fields:
                found.append(Write(node.lineno, node.args[1].value, "setattr"))
        for child in ast.iter_child_nodes(node):
            visit(child, in_class)

    visit(ast.parse(source), None)
    return found


def violations(sources: dict[str, str], owner: dict[str, str]) -> list[str]:
    """``file:line: field (how); its owner is ...`` for every write in ``sources`` (file -> text)
    outside the field's owner."""
    records = {r.__name__ for r in RECORDS}
    return [f"{rel}:{w.line}: {w.field} ({w.how}); its owner is {owner[w.field]}"
            for rel, text in sorted(sources.items()) for w in writes(text, set(owner), records) if owner[w.field] != rel]


def test_every_field_of_the_job_s_state_is_written_by_its_owner_only() -> None:
    owner = owners()
    sources = {str(p.relative_to(ROOT)): p.read_text() for p in sorted((ROOT / "tfmesos").rglob("*.py"))}
    assert "tfmesos/core/state/tasks.py" in sources and all(file in sources for file in owner.values()), \
        "an owner names a module that is not there"
    wrong = violations(sources, owner)
    assert not wrong, "written outside its owner (ask the owner: a function there):\n  " + "\n  ".join(wrong)


def test_outside_the_core_the_job_is_read_through_its_questions() -> None:
    """``Job.transient`` (and ``state``) are doors for the core's own tests: the shell, the store and
    the front-ends ask the ``Job``'s named questions."""
    found = []
    for path in sorted((ROOT / "tfmesos").rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        if rel.startswith("tfmesos/core/"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("transient", "_state", "_tr"):
                found.append(f"{rel}:{node.lineno}: .{node.attr}")
    assert not found, found


# ---------------------------------------------------------------- the check can fail
FIELDS = {"phase", "held", "events", "state", "suppressed", "by_task_id", "cause"}


def test_a_planted_write_is_found_in_every_form() -> None:
    planted = """
def gang(job, tr, rec, key, tid):
    job.phase = "RUNNING"
    tr.hold.held.clear()
    job.events.append("placed")
    rec.state, job.cause = 1, "x"
    job.by_task_id[tid] = key
    tr.interest.suppressed |= True
    del job.tasks[key].state
    setattr(job, "phase", 2)
    reads = (job.phase, tr.hold.held.get("O1"), job.events[-1])
"""
    found = [(w.line, w.field, w.how) for w in writes(planted, FIELDS, {"JobState"})]
    assert found == [(3, "phase", "assign"), (4, "held", ".clear()"), (5, "events", ".append()"),
                     (6, "state", "assign"), (6, "cause", "assign"), (7, "by_task_id", "assign"),
                     (8, "suppressed", "augassign"), (9, "state", "delete"), (10, "phase", "setattr")]


def test_self_of_another_class_is_its_own_attribute_and_self_of_a_record_is_a_field() -> None:
    source = """
class Console:
    def __init__(self):
        self.state = "quiet"
        self.events = []
    def note(self, text):
        self.events.append(text)

class JobState:
    def note(self, text):
        self.events.append(text)
"""
    assert [(w.line, w.field) for w in writes(source, FIELDS, {"JobState"})] == [(11, "events")]


def test_a_write_outside_the_owner_fails_the_rule_naming_the_owner() -> None:
    owner = owners()
    assert owner["phase"] == "tfmesos/core/phase.py" and owner["held"] == "tfmesos/core/placement/offer_hold.py"
    assert owner["state"] == "tfmesos/core/state/tasks.py" and owner["events"] == "tfmesos/core/state/notices.py"
    sources = {str(p.relative_to(ROOT)): p.read_text() for p in (ROOT / "tfmesos" / "core").rglob("*.py")}
    sources["tfmesos/scheduler/job_shell.py"] = ("def on_update(sched, rec):\n    rec.state = 'TASK_RUNNING'\n"
                                                 "    sched.job.transient.hold.held.clear()\n")
    sources["tfmesos/core/job/gang.py"] += "\n\ndef planted(job):\n    job.phase = None\n"
    found = violations(sources, owner)
    assert found == [
        f"tfmesos/core/job/gang.py:{sources['tfmesos/core/job/gang.py'].count(chr(10))}: phase (assign); "
        "its owner is tfmesos/core/phase.py",
        "tfmesos/scheduler/job_shell.py:2: state (assign); its owner is tfmesos/core/state/tasks.py",
        "tfmesos/scheduler/job_shell.py:3: held (.clear()); its owner is tfmesos/core/placement/offer_hold.py"], found
