"""A Workload's topology assignment: v1beta1 lists every domain, v1beta2 packs them in slices.

v1beta1: ``{"levels": [...], "domains": [{"values": [one per level], "count": pods}, ...]}``.
v1beta2: ``{"levels": [...], "slices": [{"domainCount": n, "valuesPerLevel": [...],
"podCounts": {...}}]}``, where a level's values are either one ``universal`` value shared by
the slice's domains or ``individual`` ``roots`` between an optional ``prefix`` and ``suffix``,
and pod counts are either ``universal`` or ``individual``.

Packing writes one slice holding every domain, which any v1beta2 reader expands back to the
same domains in the same order; how upstream splits domains into slices is not reproduced.
"""

from __future__ import annotations

from typing import Any

Assignment = dict[str, Any]


def pack(assignment: Assignment) -> Assignment:
    """The v1beta2 form of a v1beta1 topology assignment (a new dict)."""
    out = {k: v for k, v in assignment.items() if k != "domains"}
    domains = assignment.get("domains")
    if not isinstance(domains, list):
        return out
    if not domains:
        out["slices"] = []
        return out
    levels = len(assignment.get("levels") or ())
    values = [list(d.get("values") or ()) for d in domains]
    counts = [d.get("count", 0) for d in domains]
    out["slices"] = [
        {
            "domainCount": len(domains),
            "valuesPerLevel": [_level([v[i] for v in values]) for i in range(levels)],
            "podCounts": _counts(counts),
        }
    ]
    return out


def _level(values: list[str]) -> dict[str, Any]:
    if len(set(values)) == 1:
        return {"universal": values[0]}
    # Affixes shrink long generated names (e.g. "pool-1-node-7"); every root keeps at least
    # one character so no value is spelled by its affixes alone.
    shortest = min(len(v) for v in values)
    prefix = _common_prefix(values)[: max(shortest - 1, 0)]
    rest = [v[len(prefix) :] for v in values]
    suffix = _common_prefix([r[::-1] for r in rest])[::-1]
    keep = min(len(r) for r in rest) - 1
    suffix = suffix[max(len(suffix) - keep, 0) :] if keep > 0 else ""
    individual: dict[str, Any] = {}
    if prefix:
        individual["prefix"] = prefix
    if suffix:
        individual["suffix"] = suffix
    individual["roots"] = [r[: len(r) - len(suffix)] for r in rest]
    return {"individual": individual}


def _common_prefix(values: list[str]) -> str:
    first = values[0]
    for index, char in enumerate(first):
        if any(index >= len(v) or v[index] != char for v in values):
            return first[:index]
    return first


def _counts(counts: list[Any]) -> dict[str, Any]:
    if len(set(counts)) == 1:
        return {"universal": counts[0]}
    return {"individual": counts}


def unpack(assignment: Assignment) -> Assignment:
    """The v1beta1 form of a v1beta2 topology assignment (a new dict): every slice's domains,
    in order."""
    out = {k: v for k, v in assignment.items() if k != "slices"}
    slices = assignment.get("slices")
    if not isinstance(slices, list):
        return out
    domains: list[dict[str, Any]] = []
    for piece in slices:
        count = int(piece.get("domainCount") or 0)
        levels = [_values(level, count) for level in piece.get("valuesPerLevel") or ()]
        pods = _pods(piece.get("podCounts") or {}, count)
        for index in range(count):
            domains.append({"values": [v[index] for v in levels], "count": pods[index]})
    out["domains"] = domains
    return out


def _values(level: dict[str, Any], count: int) -> list[str]:
    if "universal" in level:
        return [level["universal"]] * count
    individual = level.get("individual") or {}
    prefix, suffix = individual.get("prefix") or "", individual.get("suffix") or ""
    roots = list(individual.get("roots") or ())
    return [f"{prefix}{root}{suffix}" for root in roots] + [""] * (count - len(roots))


def _pods(counts: dict[str, Any], count: int) -> list[Any]:
    if "universal" in counts:
        return [counts["universal"]] * count
    individual = list(counts.get("individual") or ())
    return individual + [0] * (count - len(individual))
