"""Mesos resource arithmetic: scalars, ranges and sets keyed like Mesos does.

Scalars are kept as fixed-point integers with three decimals (Mesos'
``convertToFixed``), so that 2.0 - 0.1 - 0.1 is exactly 1.8 as in the traces.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

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
        if ranks is not None:
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
    # Unreserved resources in the post-refinement format carry no reservations.
    role = resource.get("role") or "*"
    reservations = identity.get("reservations")
    if reservations:
        role = reservations[-1].get("role", role)
    allocation = resource.get("allocation_info") or {}
    key = ResourceKey(
        name=name,
        type=rtype,
        role=role,
        allocation_role=allocation.get("role") if allocation else None,
        identity=json.dumps(identity, sort_keys=True, separators=(",", ":")) if identity else "",
    )
    return key, value


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
            fields.update({k: v for k, v in extra.items() if k != "reservations"})
        else:
            if key.role != "*" and "reservations" not in extra:
                extra["reservations"] = [{"type": "STATIC", "role": key.role}]
            extra.pop("reservation", None)
            fields.update(extra)
        if key.allocation_role is not None and style != "agent":
            fields["allocation_info"] = {"role": key.allocation_role}
        _JSON_FIELDS[(key, style)] = fields
    return fields
