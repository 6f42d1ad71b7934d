"""Reading an options file (JSON, or YAML by its extension) into plain JSON data, refusing what
the DC/OS universe would refuse or what could only be a mistake: a file that is not a regular
file, larger than ``MAX_BYTES``, not UTF-8, nested deeper than ``MAX_DEPTH``, with duplicate
keys, NaN/Infinity, or (YAML) values JSON has no type for. Each refusal is one ``OptionsError``
line naming the file and, where known, the line.
"""
from __future__ import annotations

import json
import math
import os
import re
import stat
from pathlib import Path
from typing import Any

from ..errors import cut
from .problems import OptionsError, json_path

MAX_BYTES = 1 << 20  # an options file is a few KB; Cosmos refuses large ones too
MAX_DEPTH = 32  # the schema nests 3 levels
MAX_NODES = 100_000  # YAML aliases may expand a small file into a huge document
MAX_INTEGER = 2**53  # larger whole numbers lose precision as floats (and JSON readers' doubles)
YAML_SUFFIXES = (".yaml", ".yml")


def read_text(path: Path) -> str:
    """The file's text, or an ``OptionsError`` saying plainly why it cannot be an options file."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise OptionsError([f"{path}: cannot read: {exc.strerror}"]) from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file (a FIFO, socket or device)"
        raise OptionsError([f"{path}: is {kind}: expected an options file"])
    if st.st_size > MAX_BYTES:
        raise OptionsError([f"{path}: {st.st_size} bytes: expected an options file of at most {MAX_BYTES} bytes"])
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise OptionsError([f"{path}: cannot read: {exc.strerror}"]) from None
    if len(data) > MAX_BYTES:
        raise OptionsError([f"{path}: more than {MAX_BYTES} bytes: expected a smaller options file"])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise OptionsError([f"{path}: not UTF-8 (byte 0x{data[exc.start]:02x} at line {line}): "
                            "expected the file saved as UTF-8"]) from None
    return text.removeprefix("\ufeff")  # a BOM some editors write


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Refused(f"duplicate key {cut(key, 60)!r}: expected each key once (the universe refuses duplicates)")
        out[key] = value
    return out


class _Refused(ValueError):
    pass


class _Constant:
    """Where Python's json read NaN, Infinity or -Infinity: kept to name the field, then refused."""

    def __init__(self, name: str):
        self.name = name


# A JSON string (skipped whole, so '"NaN"' is text) or one of the constants outside strings.
_CONSTANT = re.compile(r'"(?:[^"\\]|\\.)*"|(-?Infinity|NaN)')


def _first_constant(data: Any) -> tuple[tuple[Any, ...], _Constant] | None:
    """Path and marker of the first constant in document order."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(data, ())]
    while stack:
        value, where = stack.pop()
        if isinstance(value, _Constant):
            return where, value
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        stack.extend(reversed([(v, where + (k,)) for k, v in items]))
    return None


def _refuse_constant(text: str, data: Any, path: Path) -> None:
    found = _first_constant(data)
    if found is None:
        return
    where, constant = found
    match = next(m for m in _CONSTANT.finditer(text) if m.group(1))
    line = text.count("\n", 0, match.start(1)) + 1
    column = match.start(1) - (text.rfind("\n", 0, match.start(1)) + 1) + 1
    raise OptionsError([f"{json_path(where)}: {constant.name} at line {line} column {column} of {path} "
                        "is not a number JSON allows: expected a finite number"])


def _yaml_hint(text: str, path: Path) -> str:
    """What to do when a file that is not JSON reads as a YAML mapping: it is read by its suffix."""
    import yaml

    if text.lstrip()[:1] in ("{", "["):  # JSON with a mistake (YAML would read some of those too)
        return ""
    try:
        reads = isinstance(yaml.safe_load(text), dict)
    except (yaml.YAMLError, ValueError, RecursionError):
        reads = False
    return (f"; it reads as YAML: name it {path.stem}.yaml to have it read as YAML (a file is read by its suffix)"
            if reads else "")


def parse_json(text: str, path: Path) -> Any:
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_constant=_Constant)
    except json.JSONDecodeError as exc:
        raise OptionsError([f"{path}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
                            + _yaml_hint(text, path)]) from None
    except ValueError as exc:  # an integer of more digits than Python converts (sys.get_int_max_str_digits)
        raise OptionsError([f"{path}: not valid JSON: {cut(str(exc), 120)}"]) from None
    except _Refused as exc:
        raise OptionsError([f"{path}: {exc}"]) from None
    except RecursionError:
        raise OptionsError([f"{path}: nested too deep: expected at most {MAX_DEPTH} levels"]) from None
    _refuse_constant(text, data, path)
    return data


_JSON_EXPONENT = re.compile(r"^[-+]?[0-9]+(\.[0-9]*)?[eE][-+]?[0-9]+$")
_JSON_INTEGER = re.compile(r"^[-+]?(0|[1-9][0-9]*)$")


def parse_yaml(text: str, path: Path) -> Any:
    import yaml

    class Loader(yaml.SafeLoader):
        """Safe loading, no duplicate keys, and dates left as the strings they were written as."""

        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                if not isinstance(key, str):
                    raise _YamlRefused(key_node, f"key {cut(key, 60)} is not a string: expected text keys, as in JSON")
                if key in seen:
                    raise _YamlRefused(key_node, f"duplicate key {cut(key, 60)!r}: expected each key once")
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    # No dates, and integers as JSON writes them: YAML 1.1 read mem: 01024 as octal (532 MB), 0x10
    # as 16 and 1:30 as 90; such a value is now text, which the schema refuses naming the field.
    dropped = ("tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:int")
    Loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag not in dropped]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    Loader.add_implicit_resolver("tag:yaml.org,2002:int", _JSON_INTEGER, list("-+0123456789"))
    # YAML 1.1 reads 1e12 as a string; JSON (and the schema's numbers) mean a float.
    Loader.add_implicit_resolver("tag:yaml.org,2002:float", _JSON_EXPONENT, list("-+0123456789"))

    class _YamlRefused(ValueError):
        def __init__(self, node: Any, text: str):
            super().__init__(f"line {node.start_mark.line + 1}: {text}")

    try:
        return yaml.load(text, Loader=Loader)  # noqa: S506 - Loader derives from SafeLoader
    except _YamlRefused as exc:
        raise OptionsError([f"{path}: {exc}"]) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        raise OptionsError([f"{path}: not valid YAML: {exc.problem or exc.context}{where}"]) from None
    except yaml.YAMLError as exc:
        raise OptionsError([f"{path}: not valid YAML: {cut(str(exc), 200)}"]) from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise OptionsError([f"{path}: not valid YAML: {cut(str(exc), 120)}"]) from None
    except RecursionError:
        raise OptionsError([f"{path}: nested too deep: expected at most {MAX_DEPTH} levels"]) from None


def check_plain_json(data: Any, path: Path) -> None:
    """Depth, size and types of a parsed document; walks iteratively (no recursion limit)."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(data, ())]
    nodes = 0
    while stack:
        value, where = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise OptionsError([f"{path}: more than {MAX_NODES} values (YAML aliases expanded): expected a smaller document"])
        if len(where) > MAX_DEPTH:
            raise OptionsError([f"{json_path(where[:MAX_DEPTH])}: nested too deep in {path}: expected at most {MAX_DEPTH} levels"])
        if isinstance(value, dict):
            stack.extend((v, where + (k,)) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, where + (i,)) for i, v in enumerate(value))
        elif isinstance(value, float) and not math.isfinite(value):
            raise OptionsError([f"{json_path(where)}: {value} in {path}: expected a finite number"])
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INTEGER:
            raise OptionsError([f"{json_path(where)}: {cut(str(value), 30)} in {path} is too large: expected a "
                                f"number of at most {MAX_INTEGER} (it would overflow a float)"])
        elif isinstance(value, str) and "\x00" in value:
            raise OptionsError([f"{json_path(where)}: a NUL character in {path}: expected text without one"])
        elif not isinstance(value, (str, int, float, bool)) and value is not None:
            raise OptionsError([f"{json_path(where)}: a YAML {type(value).__name__} in {path}: "
                                "expected a JSON value (text, number, true/false, null, list or mapping)"])


def read_document(path: str | Path) -> Any:
    """The parsed file: YAML for .yaml/.yml, JSON otherwise."""
    path = Path(path)
    text = read_text(path)
    data = parse_yaml(text, path) if path.suffix.lower() in YAML_SUFFIXES else parse_json(text, path)
    check_plain_json(data, path)
    return data


def _yaml_node_lines(text: str) -> dict[str, int]:
    """JSON path -> 1-based line of every node of a YAML document (for messages)."""
    import yaml

    lines: dict[str, int] = {}
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return lines
    stack: list[tuple[Any, tuple[Any, ...]]] = [(root, ())] if root is not None else []
    while stack:
        node, where = stack.pop()
        lines.setdefault(json_path(where), node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            stack.extend((v, where + (k.value,)) for k, v in node.value if isinstance(k, yaml.ScalarNode))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((v, where + (i,)) for i, v in enumerate(node.value))
    return lines


def with_yaml_lines(exc: OptionsError, path: Path) -> OptionsError:
    """The same problems, each with the YAML line of its path (or its nearest parent) when known."""
    if path.suffix.lower() not in YAML_SUFFIXES:
        return exc
    lines = _yaml_node_lines(read_text(path))
    out = []
    for problem in exc.problems:
        where = problem.split(":", 1)[0]
        while where and where not in lines and where != "$":
            parent = re.sub(r"(\.[^.\[]*|\[\d+\])$", "", where)
            if parent == where:  # a key with '[' or ':' in it: no parent to be found by text
                break
            where = parent
        out.append(f"{problem} ({path.name} line {lines[where]})" if where in lines and where != "$" else problem)
    return OptionsError(out)
