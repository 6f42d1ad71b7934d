"""Print the options reference (Markdown) from config-schema.json; docs/options.md embeds its output.

    python tools/options_reference.py           # print
    python tools/options_reference.py --check   # exit 1 if docs/options.md's copy is stale
    python tools/options_reference.py --write   # refresh docs/options.md's copy
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- options-reference:begin -->", "<!-- options-reference:end -->"


def _type(leaf: dict) -> str:
    t = leaf.get("type", "")
    if t == "array":
        return f"list of {leaf.get('items', {}).get('type', 'any')}"
    if "enum" in leaf:
        return " \\| ".join(f"`{v}`" for v in leaf["enum"])
    bounds = []
    if "minimum" in leaf:
        bounds.append(f"{'>' if leaf.get('exclusiveMinimum') else '>='} {leaf['minimum']}")
    if "maximum" in leaf:
        bounds.append(f"<= {leaf['maximum']}")
    return t + (f" ({', '.join(bounds)})" if bounds else "")


def _row(path: str, leaf: dict) -> str:
    default = json.dumps(leaf.get("default"))
    desc = leaf.get("description", "").replace("|", "\\|")
    return f"| `{path}` | {_type(leaf)} | `{default}` | {desc} |"


def _role_rows(roles: dict) -> list[str]:
    """The roles share one shape: a field is listed once as ``roles.<role>.x`` where every role
    has the same type, default and description, and once per role where they differ."""
    names = list(roles)
    rows = []
    for field in roles[names[0]]["properties"]:
        leaves = [roles[r]["properties"][field] for r in names]
        if all(leaf == leaves[0] for leaf in leaves):
            rows.append(_row(f"roles.<role>.{field}", leaves[0]))
        else:
            rows.extend(_row(f"roles.{r}.{field}", leaf) for r, leaf in zip(names, leaves))
    return rows


def reference(schema: dict) -> str:
    lines = ["| option | type | default | what it does |", "|---|---|---|---|"]

    def walk(node: dict, path: str) -> None:
        for name, leaf in node.get("properties", {}).items():
            p = f"{path}.{name}" if path else name
            if p == "roles":
                lines.extend(_role_rows(leaf["properties"]))
            elif leaf.get("type") == "object" and "properties" in leaf:
                walk(leaf, p)
            else:
                lines.append(_row(p, leaf))

    walk(schema, "")
    roles = ", ".join(f"`{r}`" for r in schema["properties"]["roles"]["properties"])
    lines.append("")
    lines.append(f"`<role>` is any of {roles}: those rows hold for every role.")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    text = reference(json.loads((ROOT / "config-schema.json").read_text()))
    page = ROOT / "docs" / "options.md"
    if not argv:
        print(text)
        return 0
    current = page.read_text()
    head, rest = current.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    fresh = f"{head}{BEGIN}\n{text}\n{END}{tail}"
    if argv[0] == "--check":
        if fresh != current:
            print("docs/options.md's options reference is stale: run python tools/options_reference.py --write")
            return 1
        return 0
    page.write_text(fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
