"""Reading the golden traces and comparing live JSON with them.

Trace values like ``<FRAMEWORK_ID_1>`` are placeholders: a :class:`Bindings`
object binds each placeholder to the first live value it meets and then
insists that the same placeholder always gets the same value (and that two
placeholders never share one), so ids, uuids and container ids must flow
exactly as in real Mesos.  Everything else must match exactly: key sets,
states, reasons, sources, messages, numbers.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterable

# Copied into the repository (tests/data/README.md says from where).
TRACE_DIR = Path(__file__).resolve().parents[1] / "data" / "mesos-traces"
_PLACEHOLDER = re.compile(r"<[A-Z_]+?(?:_\d+)?>")
_PLAIN_PLACEHOLDER = re.compile(r"^<[A-Z_]+?(?:_\d+)?>$")


def load(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (TRACE_DIR / name).read_text().splitlines() if line.strip()]


def load_json(name: str) -> dict[str, Any]:
    return json.loads((TRACE_DIR / name).read_text())


def events(trace: list[dict[str, Any]], kind: str | None = None, stream: str | None = None,
           direction: str = "event") -> list[dict[str, Any]]:
    out = []
    for line in trace:
        if line["dir"] != direction or line.get("body") is None:
            continue
        if stream is not None and line.get("stream") != stream:
            continue
        if kind is None or line["body"].get("type") == kind:
            out.append(line["body"])
    return out


def update(trace: list[dict[str, Any]], task_id: str, state: str, nth: int = 0) -> dict[str, Any]:
    found = [e["update"]["status"] for e in events(trace, "UPDATE")
             if e["update"]["status"]["task_id"]["value"] == task_id and e["update"]["status"]["state"] == state]
    return found[nth]


def calls(trace: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    """(call, its response) pairs in trace order."""
    pairs = []
    pending: list[dict[str, Any]] = []
    for line in trace:
        if line["dir"] == "call":
            pending.append(line)
        elif line["dir"] == "response" and pending:
            pairs.append((pending.pop(0), line))
    return pairs


def call_with_note(trace: list[dict[str, Any]], fragment: str) -> tuple[dict[str, Any], dict[str, Any]]:
    for call, response in calls(trace):
        if fragment in call.get("note", ""):
            return call, response  # type: ignore[return-value]
    raise KeyError(fragment)


class Bindings:
    def __init__(self, ports: dict[int, int] | None = None) -> None:
        self.values: dict[str, Any] = {}
        self.ports = dict(ports or {})

    def bind(self, placeholder: str, value: Any, path: str) -> None:
        if placeholder in self.values:
            assert self.values[placeholder] == value, (
                f"{path}: {placeholder} was {self.values[placeholder]!r}, now {value!r}")
            return
        if isinstance(value, str):
            for other, bound in self.values.items():
                assert bound != value or not isinstance(bound, str), (
                    f"{path}: {value!r} bound to both {other} and {placeholder}")
        self.values[placeholder] = value

    def fill(self, expected: Any) -> Any:
        """Substitute bound placeholders (and our ports) into trace data to replay it."""
        if isinstance(expected, dict):
            return {k: self.fill(v) for k, v in expected.items()}
        if isinstance(expected, list):
            return [self.fill(v) for v in expected]
        if isinstance(expected, str):
            if _PLAIN_PLACEHOLDER.match(expected) and expected in self.values:
                return self.values[expected]
            text = _PLACEHOLDER.sub(lambda m: str(self.values.get(m.group(0), m.group(0))), expected)
            return self._ports_in_text(text)
        return expected

    def _ports_in_text(self, text: str) -> str:
        for theirs, ours in self.ports.items():
            text = text.replace(f":{theirs}", f":{ours}")
        return text

    def match(self, actual: Any, expected: Any, path: str = "$") -> None:
        if isinstance(expected, str) and _PLAIN_PLACEHOLDER.match(expected):
            assert actual is not None, f"{path}: expected a value for {expected}"
            self.bind(expected, actual, path)
            return
        if isinstance(expected, dict):
            assert isinstance(actual, dict), f"{path}: expected an object, got {actual!r}"
            missing = sorted(set(expected) - set(actual))
            extra = sorted(set(actual) - set(expected))
            assert not missing and not extra, f"{path}: missing keys {missing}, unexpected keys {extra}"
            for key in expected:
                self.match(actual[key], expected[key], f"{path}.{key}")
            return
        if isinstance(expected, list):
            assert isinstance(actual, list), f"{path}: expected a list, got {actual!r}"
            assert len(actual) == len(expected), f"{path}: {len(actual)} items, expected {len(expected)}"
            for index, (a, e) in enumerate(zip(actual, expected)):
                self.match(a, e, f"{path}[{index}]")
            return
        if isinstance(expected, str):
            expected = self._ports_in_text(expected)
            if _PLACEHOLDER.search(expected):
                self._match_text(actual, expected, path)
                return
        if isinstance(expected, int) and not isinstance(expected, bool) and path.endswith("port"):
            expected = self.ports.get(expected, expected)
        if isinstance(expected, float) or isinstance(actual, float):
            assert isinstance(actual, (int, float)) and not isinstance(actual, bool), f"{path}: {actual!r}"
            assert abs(float(actual) - float(expected)) < 1e-9, f"{path}: {actual!r} != {expected!r}"
            assert type(actual) is type(expected), f"{path}: {type(actual).__name__} vs {type(expected).__name__}"
            return
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"

    def _match_text(self, actual: Any, expected: str, path: str) -> None:
        assert isinstance(actual, str), f"{path}: expected text, got {actual!r}"
        names = _PLACEHOLDER.findall(expected)
        pattern = "".join(re.escape(part) if i % 2 == 0 else "(.+?)"
                          for i, part in enumerate(_interleave(expected)))
        found = re.fullmatch(pattern, actual)
        assert found, f"{path}: {actual!r} does not match {expected!r}"
        for name, value in zip(names, found.groups()):
            bound = self.values.get(name)
            if bound is not None:
                assert str(bound) == value, f"{path}: {name} is {bound!r}, text has {value!r}"
            else:
                self.bind(name, value, path)


def _interleave(text: str) -> Iterable[str]:
    """Split into literal, placeholder, literal, ... (always odd length)."""
    parts: list[str] = []
    position = 0
    for found in _PLACEHOLDER.finditer(text):
        parts.append(text[position:found.start()])
        parts.append(found.group(0))
        position = found.end()
    parts.append(text[position:])
    return parts


def raw_frame(expected_raw: str, bindings: Bindings) -> bytes:
    """The trace's exact RecordIO frame with our values in place of placeholders."""
    _, _, record = expected_raw.partition("\n")
    filled = _PLACEHOLDER.sub(lambda m: _json_fragment(bindings.values[m.group(0)]), record)
    filled = bindings._ports_in_text(filled)
    for theirs, ours in bindings.ports.items():
        filled = filled.replace(f'"port":{theirs}', f'"port":{ours}')
    data = filled.encode("utf-8")
    return str(len(data)).encode() + b"\n" + data


def _json_fragment(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)
