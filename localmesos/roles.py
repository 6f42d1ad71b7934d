"""Role name rules (src/common/roles.cpp)."""
from __future__ import annotations

_INVALID = set("\x08\x0b\x0c\t\n\r ")


def validate_role(role: str) -> str | None:
    if role == "*":
        return None
    if role.startswith("/"):
        return f"Role '{role}' cannot start with a slash"
    if role.endswith("/"):
        return f"Role '{role}' cannot end with a slash"
    if "//" in role:
        return f"Role '{role}' cannot contain two adjacent slashes"
    components = [c for c in role.split("/") if c]
    if not components:
        return "Role names cannot be the empty string"
    for component in components:
        if component == ".":
            return f"Role '{role}' cannot include '.' as a component"
        if component == "..":
            return f"Role '{role}' cannot include '..' as a component"
        if component == "*":
            return f"Role '{role}' cannot include '*' as a component"
        if component.startswith("-"):
            return f"Role component '{component}' is invalid because it starts with a dash"
        if any(c in _INVALID for c in component):
            return f"Role component '{component}' is invalid because it contains backspace or whitespace"
    return None
