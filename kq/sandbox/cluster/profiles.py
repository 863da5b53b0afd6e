"""Cluster profiles: the node pools a sandbox starts with, from a built-in name or a YAML file."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import yaml

from kq.api.quantity import QuantityError, parse_quantity
from kq.sandbox.cluster.kubelet import DEFAULT_RUN_SECONDS

BUILTIN = ("s1", "s2", "s3", "s4")
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_POOL_KEYS = {
    "name", "count", "labels", "taints", "capacity", "allocatable", "queuedProvisioning",
    "zone", "machineType",
}  # fmt: skip


class ProfileError(ValueError):
    """A profile that cannot be used; the message names the offending field."""


@dataclass(frozen=True, slots=True)
class NodePool:
    name: str
    count: int
    machine_type: str
    zone: str
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Mapping[str, str], ...] = ()
    capacity: Mapping[str, str] = field(default_factory=dict)
    allocatable: Mapping[str, str] = field(default_factory=dict)
    queued_provisioning: bool = False


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    region: str
    pools: tuple[NodePool, ...]
    default_run_seconds: float = DEFAULT_RUN_SECONDS
    """How long a container runs when neither an annotation nor a ``sleep`` says (kubelet)."""

    def pool(self, name: str) -> NodePool:
        for pool in self.pools:
            if pool.name == name:
                return pool
        raise KeyError(name)


def load_profile(name_or_path: str | Path) -> Profile:
    """A built-in profile by name (``s1``…``s4``) or a profile YAML file by path."""
    if isinstance(name_or_path, str) and name_or_path in BUILTIN:
        text = resources.files(__package__).joinpath("profiles", f"{name_or_path}.yaml")
        return parse_profile(yaml.safe_load(text.read_text("utf-8")), name_or_path)
    path = Path(name_or_path)
    if not path.is_file():
        raise ProfileError(f"no built-in profile {str(name_or_path)!r} ({', '.join(BUILTIN)})")
    return parse_profile(yaml.safe_load(path.read_text("utf-8")), str(path))


def _str_map(raw: object, where: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ProfileError(f"{where}: must be a mapping")
    return {str(k): str(v) for k, v in raw.items()}


def _quantities(raw: object, where: str) -> dict[str, str]:
    out = _str_map(raw, where)
    for key, value in out.items():
        try:
            parse_quantity(value)
        except QuantityError as exc:
            raise ProfileError(f"{where}.{key}: {exc}") from None
    return out


def _taints(raw: object, where: str) -> tuple[Mapping[str, str], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ProfileError(f"{where}: must be a list")
    out = []
    for i, taint in enumerate(raw):
        item = _str_map(taint, f"{where}[{i}]")
        if not item.get("key"):
            raise ProfileError(f"{where}[{i}].key: required")
        if item.get("effect") not in _EFFECTS:
            raise ProfileError(f"{where}[{i}].effect: must be one of {', '.join(_EFFECTS)}")
        out.append(item)
    return tuple(out)


def _pool(raw: object, where: str, zone: str) -> NodePool:
    if not isinstance(raw, Mapping):
        raise ProfileError(f"{where}: must be a mapping")
    unknown = sorted(set(map(str, raw)) - _POOL_KEYS)
    if unknown:
        raise ProfileError(f"{where}.{unknown[0]}: unknown field")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise ProfileError(f"{where}.name: required")
    queued = raw.get("queuedProvisioning", False)
    if not isinstance(queued, bool):
        raise ProfileError(f"{where}.queuedProvisioning: must be true or false")
    count = raw.get("count", 0 if queued else 1)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise ProfileError(f"{where}.count: must be a non-negative integer")
    capacity = _quantities(raw.get("capacity"), f"{where}.capacity")
    for required in ("cpu", "memory"):
        if required not in capacity:
            raise ProfileError(f"{where}.capacity.{required}: required")
    capacity.setdefault("pods", "110")
    allocatable = {**capacity, **_quantities(raw.get("allocatable"), f"{where}.allocatable")}
    return NodePool(
        name=name,
        count=count,
        machine_type=str(raw.get("machineType", "e2-standard-8")),
        zone=str(raw.get("zone", zone)),
        labels=_str_map(raw.get("labels"), f"{where}.labels"),
        taints=_taints(raw.get("taints"), f"{where}.taints"),
        capacity=capacity,
        allocatable=allocatable,
        queued_provisioning=queued,
    )


def parse_profile(raw: object, source: str) -> Profile:
    """Validate a decoded profile document; ``source`` prefixes error messages."""
    if not isinstance(raw, Mapping):
        raise ProfileError(f"{source}: a profile must be a mapping")
    region = str(raw.get("region", "us-central1"))
    zone = str(raw.get("zone", f"{region}-a"))
    pools_raw = raw.get("nodePools")
    if not isinstance(pools_raw, list) or not pools_raw:
        raise ProfileError(f"{source}: nodePools: must be a non-empty list")
    pools = tuple(_pool(p, f"{source}: nodePools[{i}]", zone) for i, p in enumerate(pools_raw))
    seen: set[str] = set()
    for i, pool in enumerate(pools):
        if pool.name in seen:
            raise ProfileError(f"{source}: nodePools[{i}].name: duplicate {pool.name!r}")
        seen.add(pool.name)
    run = raw.get("defaultRunSeconds", DEFAULT_RUN_SECONDS)
    if not isinstance(run, int | float) or isinstance(run, bool) or run < 0:
        raise ProfileError(f"{source}: defaultRunSeconds: must be a non-negative number")
    return Profile(name=str(raw.get("name", source)), region=region, pools=pools,
                   default_run_seconds=float(run))  # fmt: skip
