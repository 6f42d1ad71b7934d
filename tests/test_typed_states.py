"""Phases, Mesos task states and restart policies are Enums in the core: no module of ``tfmesos/core``
spells one as a string (``"TASK_RUNNING"``, ``"FINISHING"``, ``"OnFailure"``) but the Enum that
defines it. Mesos' strings are parsed once, at the edge (``tfmesos/mesos/events.py``), options'
at theirs (``tfmesos/options/jobspec.py``)."""
from __future__ import annotations

import ast
from pathlib import Path

from tfmesos.core.phase import JobPhase
from tfmesos.core.spec import RestartPolicy
from tfmesos.core.task_state import TaskState

ROOT = Path(__file__).resolve().parents[1]
ENUMS = {"tfmesos/core/task_state.py": TaskState, "tfmesos/core/phase.py": JobPhase,
         "tfmesos/core/spec.py": RestartPolicy}
VALUES = {str(member) for enum in ENUMS.values() for member in enum}


def literals(source: str, defining: str | None = None) -> list[tuple[int, str]]:
    """(line, text) of every string constant that is one of the Enums' values, outside the body of
    the Enum ``defining`` (the one class where its values are written)."""
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.ClassDef) and node.name == defining:
            return
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in VALUES:
            found.append((node.lineno, node.value))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return found


def test_no_phase_task_state_or_restart_policy_is_spelled_as_a_string_in_the_core() -> None:
    modules = sorted((ROOT / "tfmesos" / "core").rglob("*.py"))
    assert len(modules) > 20, "the core moved? this test reads tfmesos/core"
    found = []
    for path in modules:
        rel = str(path.relative_to(ROOT))
        enum = ENUMS.get(rel)
        found += [f"{rel}:{line}: {text!r}" for line, text in literals(path.read_text(), enum and enum.__name__)]
    assert not found, "use the Enum (core/task_state.py, core/phase.py, core/spec.py's RestartPolicy):\n  " + \
        "\n  ".join(found)


def test_the_check_finds_a_planted_literal_and_spares_the_enum_s_own_definition() -> None:
    planted = 'def ended(rec):\n    return rec.state == "TASK_FAILED" or rec.phase in ("FINISHING",)\n'
    assert literals(planted) == [(2, "TASK_FAILED"), (2, "FINISHING")]
    assert literals('x = f"{key} TASK_FAILED: relaunched"  # text that only mentions one\n') == []
    definition = 'class JobPhase(StrEnum):\n    PLACING = "PLACING"\nWHERE = "PLACING"\n'
    assert literals(definition, "JobPhase") == [(3, "PLACING")]


def test_the_enums_are_the_words_mesos_options_and_the_record_use() -> None:
    assert TaskState("TASK_GONE_BY_OPERATOR").live is False and TaskState.TASK_UNREACHABLE.live
    assert f"{TaskState.TASK_RUNNING}" == "TASK_RUNNING" and f"{JobPhase.KILLED}" == "KILLED"
    assert RestartPolicy("ExitCode") is RestartPolicy.EXIT_CODE
    assert {str(s) for s in JobPhase} == {"PLACING", "RUNNING", "FINISHING", "SUCCEEDED", "FAILED", "KILLED", "CLOSED"}
