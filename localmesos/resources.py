"""Mesos resource arithmetic: scalars, ranges and sets keyed like Mesos does.

Scalars are kept as fixed-point integers with three decimals (Mesos'
``convertToFixed``), so that 2.0 - 0.1 - 0.1 is exactly 1.8 as in the traces.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

SCALAR, RANGES, SET = "SCALAR", "RANGES", "SET"

# Offers list an agent's resources in this order (traces 01-08), others follow;
# AgentInfo (executor SUBSCRIBED) lists them in flag order.
_ORDERS = {
    "offer": {"ports": 0, "cpus": 1, "mem": 2, "disk": 3, "gpus": 4},
    "agent": {"cpus": 0, "mem": 1, "disk": 2, "ports": 3, "gpus": 4},
}

# Fields that make two resources with the same name distinct (not mergeable).
_IDENTITY_FIELDS = ("reservation", "reservations", "disk", "revocable", "shared", "provider_id")

Ranges = tuple[tuple[int, int], ...]
Value = int | Ranges | frozenset


def to_fixed(value: float) -> int:
    """Mesos rounds scalars to three decimal digits (llround(value * 1000))."""
    scaled = value * 1000.0
    return int(math.floor(scaled + 0.5)) if scaled >= 0 else -int(math.floor(-scaled + 0.5))


def from_fixed(value: int) -> float:
    return value / 1000.0


def format_scalar(value: float) -> str:
    """Like Mesos' ostream << Value::Scalar (15 significant digits, no trailing zeros)."""
    return format(value, ".15g")


def normalize_ranges(ranges: Iterable[tuple[int, int]]) -> Ranges:
    """Sort and coalesce overlapping and adjacent ranges."""
    merged: list[list[int]] = []
    for begin, end in sorted((b, e) for b, e in ranges if b <= e):
        if merged and begin <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([begin, end])
    return tuple((b, e) for b, e in merged)


def subtract_ranges(left: Ranges, right: Ranges) -> Ranges:
    result: list[tuple[int, int]] = []
    for begin, end in left:
        pieces = [(begin, end)]
        for rb, re_ in right:
            next_pieces = []
            for b, e in pieces:
                if re_ < b or rb > e:
                    next_pieces.append((b, e))
                    continue
                if b < rb:
                    next_pieces.append((b, rb - 1))
                if re_ < e:
                    next_pieces.append((re_ + 1, e))
            pieces = next_pieces
        result.extend(pieces)
    return normalize_ranges(result)


def ranges_contain(outer: Ranges, inner: Ranges) -> bool:
    return not subtract_ranges(inner, outer)


def format_ranges(ranges: Ranges) -> str:
    return "[" + ", ".join(f"{b}-{e}" for b, e in ranges) + "]"


@dataclass(frozen=True)
class ResourceKey:
    """What makes two resource entries mergeable (same name, type, role, ...)."""

    name: str
    type: str
    role: str = "*"
    allocation_role: str | None = None
    identity: str = ""  # canonical JSON of reservation/disk/revocable/... fields


class ResourceError(ValueError):
    """A resource that Mesos' Resources::validate would reject."""


class Resources:
    """An immutable-by-convention multiset of Mesos resources."""

    __slots__ = ("_items",)

    def __init__(self, items: dict[ResourceKey, Value] | None = None) -> None:
        self._items: dict[ResourceKey, Value] = dict(items or {})

    # -- construction -------------------------------------------------------
    @classmethod
    def from_json(cls, resources: Iterable[dict[str, Any]]) -> "Resources":
        result = cls()
        for resource in resources:
            key, value = _parse_resource(resource)
            result._add_item(key, value)
        return result

    @classmethod
    def agent_defaults(cls, cpus: float, mem: float, disk: float, ports: tuple[int, int] | None,
                       gpus: int) -> "Resources":
        items: dict[ResourceKey, Value] = {}
        if ports is not None:
            items[ResourceKey("ports", RANGES)] = normalize_ranges([ports])
        items[ResourceKey("cpus", SCALAR)] = to_fixed(cpus)
        items[ResourceKey("mem", SCALAR)] = to_fixed(mem)
        items[ResourceKey("disk", SCALAR)] = to_fixed(disk)
        if gpus > 0:
            items[ResourceKey("gpus", SCALAR)] = to_fixed(float(gpus))
        return cls({k: v for k, v in items.items() if not _is_empty_value(v)})

    def overridden_by(self, named: "Resources") -> "Resources":
        """Agent ``--resources``: every name given replaces the detected (default) amounts."""
        names = {k.name for k in named._items}
        return self.filter(lambda k: k.name not in names) + named

    def copy(self) -> "Resources":
        return Resources(self._items)

    # -- queries ------------------------------------------------------------
    def __bool__(self) -> bool:
        return bool(self._items)

    def empty(self) -> bool:
        return not self._items

    def __iter__(self) -> Iterator[tuple[ResourceKey, Value]]:
        return iter(self._items.items())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Resources) and self._items == other._items

    __hash__ = None  # type: ignore[assignment]  # mutable value type

    def scalar(self, name: str) -> float:
        total = sum(v for k, v in self._items.items() if k.name == name and k.type == SCALAR)
        return from_fixed(int(total))

    def allocation_roles(self) -> set[str | None]:
        return {k.allocation_role for k in self._items}

    def contains(self, other: "Resources") -> bool:
        for key, value in other._items.items():
            mine = self._items.get(key)
            if mine is None:
                return False
            if key.type == SCALAR:
                if mine < value:  # type: ignore[operator]
                    return False
            elif key.type == RANGES:
                if not ranges_contain(mine, value):  # type: ignore[arg-type]
                    return False
            elif not value <= mine:  # type: ignore[operator]
                return False
        return True

    # -- arithmetic ---------------------------------------------------------
    def _add_item(self, key: ResourceKey, value: Value) -> None:
        mine = self._items.get(key)
        if mine is None:
            merged = value
        elif key.type == SCALAR:
            merged = mine + value  # type: ignore[operator]
        elif key.type == RANGES:
            merged = normalize_ranges(list(mine) + list(value))  # type: ignore[arg-type]
        else:
            merged = mine | value  # type: ignore[operator]
        if _is_empty_value(merged):
            self._items.pop(key, None)
        else:
            self._items[key] = merged

    def _sub_item(self, key: ResourceKey, value: Value) -> None:
        mine = self._items.get(key)
        if mine is None:
            return
        if key.type == SCALAR:
            left = mine - value  # type: ignore[operator]
        elif key.type == RANGES:
            left = subtract_ranges(mine, value)  # type: ignore[arg-type]
        else:
            left = mine - value  # type: ignore[operator]
        if _is_empty_value(left):
            del self._items[key]
        else:
            self._items[key] = left

    def __add__(self, other: "Resources") -> "Resources":
        result = self.copy()
        for key, value in other._items.items():
            result._add_item(key, value)
        return result

    def __sub__(self, other: "Resources") -> "Resources":
        result = self.copy()
        for key, value in other._items.items():
            result._sub_item(key, value)
        return result

    def allocate(self, role: str) -> "Resources":
        """Tag every resource with ``allocation_info.role`` (injectAllocationInfo)."""
        result = Resources()
        for key, value in self._items.items():
            result._add_item(_allocated_key(key, role), value)
        return result

    def filter(self, keep: Callable[[ResourceKey], bool]) -> "Resources":
        return Resources({k: v for k, v in self._items.items() if keep(k)})

    def unreserved(self) -> "Resources":
        return self.filter(lambda k: k.role == "*")

    def reserved_to(self, role: str) -> "Resources":
        """Resources reserved to ``role`` or to one of its ancestors (hierarchical roles)."""
        return self.filter(lambda k: k.role != "*" and _is_self_or_ancestor(k.role, role))

    def allocatable_to(self, role: str) -> "Resources":
        """Resources::isAllocatableTo: unreserved, or reserved to the role or an ancestor."""
        return self.filter(lambda k: k.role == "*" or _is_self_or_ancestor(k.role, role))

    def reserved_roles(self) -> set[str]:
        return {k.role for k in self._items if k.role != "*"}

    def scalars(self) -> dict[str, float]:
        totals: dict[str, int] = {}
        for key, value in self._items.items():
            if key.type == SCALAR and '"revocable"' not in key.identity:
                totals[key.name] = totals.get(key.name, 0) + value  # type: ignore[operator]
        return {name: from_fixed(total) for name, total in totals.items()}

    def cap_scalar(self, name: str, limit: float) -> "Resources":
        """At most ``limit`` of the scalar ``name`` (Mesos shrinks quota-bound offers this way)."""
        left = max(0, to_fixed(limit))
        result = Resources()
        for key, value in self._items.items():
            if key.name == name and key.type == SCALAR:
                value = min(value, left)  # type: ignore[type-var]
                left -= value  # type: ignore[operator]
            result._add_item(key, value)
        return result

    def reserve(self, reservations: list[dict[str, Any]]) -> "Resources":
        """The same quantities with a reservation pushed on (RESERVE)."""
        return self._restack(lambda stack: stack + reservations)

    def pop_reservation(self) -> "Resources":
        """The same quantities with their last reservation removed (UNRESERVE)."""
        return self._restack(lambda stack: stack[:-1])

    def _restack(self, change: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> "Resources":
        result = Resources()
        for key, value in self._items.items():
            identity = json.loads(key.identity) if key.identity else {}
            stack = identity.pop("reservations", None) or ([{"type": "STATIC", "role": key.role}]
                                                           if key.role != "*" else [])
            stack = change(stack)
            if stack and not _is_plain_static(stack):
                identity["reservations"] = stack
            role = stack[-1]["role"] if stack else "*"
            text = json.dumps(identity, sort_keys=True, separators=(",", ":")) if identity else ""
            result._add_item(ResourceKey(key.name, key.type, role, key.allocation_role, text), value)
        return result

    def unallocate(self) -> "Resources":
        result = Resources()
        for key, value in self._items.items():
            result._add_item(ResourceKey(key.name, key.type, key.role, None, key.identity), value)
        return result

    # -- output -------------------------------------------------------------
    def _sorted(self, order: str) -> list[tuple[ResourceKey, Value]]:
        """``order``: "offer", "agent" or "given" (insertion order)."""
        items = list(self._items.items())
        ranks = _ORDERS.get(order)
        if order == "offer":
            # Offers list reserved resources first, in agent order, then the unreserved (trace 11).
            agent = _ORDERS["agent"]
            items.sort(key=lambda kv: (0, agent.get(kv[0].name, len(agent)), kv[0].role, kv[0].name)
                       if kv[0].role != "*" else (1, ranks.get(kv[0].name, len(ranks)), "", kv[0].name))
        elif ranks is not None:
            items.sort(key=lambda kv: (ranks.get(kv[0].name, len(ranks)), kv[0].name))
        return items

    def to_json(self, style: str = "offer", order: str = "offer") -> list[dict[str, Any]]:
        """Render as a JSON ``Resource`` list.

        ``offer``: pre-refinement format seen by schedulers (``role: "*"``);
        ``refined``: post-refinement format (executors, refinement-capable
        schedulers: no ``role`` for unreserved resources);
        ``agent``: AgentInfo resources (no role, no allocation info).
        """
        out = []
        for key, value in self._sorted(order):
            entry: dict[str, Any] = {"name": key.name, "type": key.type}
            if key.type == SCALAR:
                entry["scalar"] = {"value": from_fixed(value)}  # type: ignore[arg-type]
            elif key.type == RANGES:
                entry["ranges"] = {"range": [{"begin": b, "end": e} for b, e in value]}  # type: ignore[union-attr]
            else:
                entry["set"] = {"item": sorted(value)}  # type: ignore[arg-type]
            entry.update(_json_fields(key, style))
            out.append(entry)
        return out

    def __str__(self) -> str:
        if not self._items:
            return "{}"
        return self.stringify("given")

    def stringify(self, order: str) -> str:
        """Mesos' ``stringify(Resources)``, used in validation messages."""
        if not self._items:
            return "{}"
        return "; ".join(_format_resource(k, v) for k, v in self._sorted(order))

    def summary(self) -> dict[str, Any]:
        """The /state flavour: {cpus, gpus, mem, disk: double, ports: "[a-b]"}."""
        scalars: dict[str, float] = {"disk": 0.0, "mem": 0.0, "gpus": 0.0, "cpus": 0.0}
        ranges: dict[str, list[tuple[int, int]]] = {}
        sets: dict[str, set[str]] = {}
        for key, value in self._items.items():
            name = key.name + ("_revocable" if '"revocable"' in key.identity else "")
            if key.type == SCALAR:
                scalars[name] = from_fixed(to_fixed(scalars.get(name, 0.0)) + value)  # type: ignore[operator]
            elif key.type == RANGES:
                ranges.setdefault(name, []).extend(value)  # type: ignore[arg-type]
            else:
                sets.setdefault(name, set()).update(value)  # type: ignore[arg-type]
        result: dict[str, Any] = dict(scalars)
        for name, rs in ranges.items():
            result[name] = format_ranges(normalize_ranges(rs))
        for name, items in sets.items():
            result[name] = "{" + ", ".join(sorted(items)) + "}"
        return result


def _is_empty_value(value: Value) -> bool:
    if isinstance(value, int):
        return value <= 0
    return len(value) == 0


def _format_resource(key: ResourceKey, value: Value) -> str:
    text = key.name
    if key.allocation_role is not None:
        text += f"(allocated: {key.allocation_role})"
    extra = json.loads(key.identity) if key.identity else {}
    reservations = extra.get("reservations")
    if reservations is None and key.role != "*":
        reservations = [{"type": "DYNAMIC" if "reservation" in extra else "STATIC", "role": key.role}]
    if reservations:
        parts = []
        for r in reservations:
            fields = [r.get("type", "STATIC"), r.get("role", "")]
            if r.get("principal"):
                fields.append(r["principal"])
            parts.append("(" + ",".join(fields) + ")")
        text += "(reservations: [" + ",".join(parts) + "])"
    if "revocable" in extra:
        text += "{REV}"
    if "shared" in extra:
        text += "<SHARED>"
    text += ":"
    if key.type == SCALAR:
        text += format_scalar(from_fixed(value))  # type: ignore[arg-type]
    elif key.type == RANGES:
        text += format_ranges(value)  # type: ignore[arg-type]
    else:
        text += "{" + ",".join(sorted(value)) + "}"  # type: ignore[arg-type]
    return text


def _reservations_of(resource: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """(reserved role, reservations in the post-refinement form) of either format."""
    reservations = resource.get("reservations")
    if reservations:
        stack = [{k: r[k] for k in ("type", "role", "principal", "labels") if k in r} for r in reservations]
        return stack[-1].get("role", "*"), stack
    role = resource.get("role") or "*"
    if role == "*":
        return "*", []
    reservation = resource.get("reservation")
    if reservation is None:
        return role, [{"type": "STATIC", "role": role}]
    entry: dict[str, Any] = {"type": "DYNAMIC", "role": role}
    entry.update({k: reservation[k] for k in ("principal", "labels") if k in reservation})
    return role, [entry]


def _is_plain_static(reservations: list[dict[str, Any]]) -> bool:
    return len(reservations) == 1 and reservations[0].get("type", "STATIC") == "STATIC" \
        and set(reservations[0]) <= {"type", "role"}


def _parse_resource(resource: dict[str, Any]) -> tuple[ResourceKey, Value]:
    """Validate one Resource like Resources::validate and return (key, value)."""
    name = resource.get("name", "")
    rtype = resource.get("type")
    if not name:
        raise ResourceError("Empty resource name")
    value: Value
    if rtype == SCALAR:
        scalar = resource.get("scalar")
        if scalar is None or "ranges" in resource or "set" in resource:
            raise ResourceError("Invalid scalar resource")
        number = float(scalar.get("value", 0.0))
        if math.isnan(number) or math.isinf(number) or (number != 0 and to_fixed(number) <= 0):
            raise ResourceError("Invalid scalar resource: value <= 0")
        value = to_fixed(number)
    elif rtype == RANGES:
        ranges = resource.get("ranges")
        if ranges is None or "scalar" in resource or "set" in resource:
            raise ResourceError("Invalid ranges resource")
        raw = [(int(r.get("begin", 0)), int(r.get("end", 0))) for r in ranges.get("range", [])]
        for i, (begin, end) in enumerate(raw):
            if begin > end:
                raise ResourceError("Invalid ranges resource: begin > end")
            for other_begin, _ in raw[i + 1:]:
                if begin <= other_begin <= end:
                    raise ResourceError("Invalid ranges resource: overlapping ranges")
        value = normalize_ranges(raw)
    elif rtype == SET:
        if "set" not in resource or "scalar" in resource or "ranges" in resource:
            raise ResourceError("Invalid set resource")
        items = (resource.get("set") or {}).get("item", [])
        if len(set(items)) != len(items):
            raise ResourceError("Invalid set resource: duplicated elements")
        value = frozenset(items)
    else:
        raise ResourceError("Unsupported resource type")
    identity = {k: resource[k] for k in _IDENTITY_FIELDS if resource.get(k) not in (None, [], {})}
    role, reservations = _reservations_of(resource)
    identity.pop("reservation", None)
    identity.pop("reservations", None)
    if reservations and not _is_plain_static(reservations):
        # Dynamic (or refined) reservations are kept in the post-refinement form; a single
        # static reservation is the key's role alone, so both formats compare equal.
        identity["reservations"] = reservations
    allocation = resource.get("allocation_info") or {}
    key = ResourceKey(
        name=name,
        type=rtype,
        role=role,
        allocation_role=allocation.get("role") if allocation else None,
        identity=json.dumps(identity, sort_keys=True, separators=(",", ":")) if identity else "",
    )
    return key, value


def _is_self_or_ancestor(reserved: str, role: str) -> bool:
    return reserved == role or role.startswith(reserved + "/")


def parse_resources_text(text: str) -> "Resources":
    """Mesos' ``--resources`` flag: ``name(role):value;...`` (or its JSON list form).

    Values are scalars (``2``), ranges (``[31000-31005,31010-31020]``) or sets (``{a,b}``);
    ``(role)`` marks a static reservation.
    """
    text = text.strip()
    if text.startswith("["):
        return Resources.from_json(json.loads(text))
    entries: list[dict[str, Any]] = []
    for part in (p.strip() for p in text.split(";")):
        if not part:
            continue
        head, sep, value = part.partition(":")
        if not sep or not value.strip():
            raise ResourceError(f"Bad resource '{part}': expected name(role):value")
        name, role = head.strip(), "*"
        if "(" in name:
            if not name.endswith(")"):
                raise ResourceError(f"Bad resource '{part}': expected name(role):value")
            name, role = name[:-1].split("(", 1)
            role = role.strip() or "*"
        value = value.strip()
        entry: dict[str, Any] = {"name": name.strip(), "role": role}
        if value.startswith("["):
            ranges = []
            for piece in value.strip("[]").split(","):
                begin, _, end = piece.strip().partition("-")
                try:
                    ranges.append({"begin": int(begin), "end": int(end or begin)})
                except ValueError:
                    raise ResourceError(f"Bad ranges in '{part}': expected [begin-end,...]") from None
            entry.update(type=RANGES, ranges={"range": ranges})
        elif value.startswith("{"):
            entry.update(type=SET, set={"item": [i.strip() for i in value.strip("{}").split(",") if i.strip()]})
        else:
            try:
                entry.update(type=SCALAR, scalar={"value": float(value)})
            except ValueError:
                raise ResourceError(f"Bad scalar in '{part}': expected a number") from None
        entries.append(entry)
    return Resources.from_json(entries)


# A cluster has a handful of distinct resource keys (name, role, reservations...), while an
# allocation round renders one offer per agent: the per-key parts are made once.  Bounded by the
# distinct keys ever seen (roles x names x reservations), which a master's lifetime keeps small.
_ALLOCATED: dict[tuple[ResourceKey, str], ResourceKey] = {}
_JSON_FIELDS: dict[tuple[ResourceKey, str], dict[str, Any]] = {}


def _allocated_key(key: ResourceKey, role: str) -> ResourceKey:
    found = _ALLOCATED.get((key, role))
    if found is None:
        found = _ALLOCATED[(key, role)] = ResourceKey(key.name, key.type, key.role, role, key.identity)
    return found


def _json_fields(key: ResourceKey, style: str) -> dict[str, Any]:
    """The entry's fields after its value: role, reservations and the rest, allocation_info.
    Shared between the entries rendered (``entry.update`` copies the top level; nothing changes
    a rendered resource's nested objects in place)."""
    fields = _JSON_FIELDS.get((key, style))
    if fields is None:
        fields = {}
        extra = json.loads(key.identity) if key.identity else {}
        if style == "offer":
            fields["role"] = key.role
            reservations = extra.pop("reservations", None)
            if reservations and reservations[-1].get("type") == "DYNAMIC":
                fields["reservation"] = {k: reservations[-1][k] for k in ("principal", "labels")
                                         if k in reservations[-1]}
            fields.update(extra)
        else:
            if key.role != "*" and "reservations" not in extra:
                extra["reservations"] = [{"type": "STATIC", "role": key.role}]
            extra.pop("reservation", None)
            fields.update(extra)
        if key.allocation_role is not None and style != "agent":
            fields["allocation_info"] = {"role": key.allocation_role}
        _JSON_FIELDS[(key, style)] = fields
    return fields
