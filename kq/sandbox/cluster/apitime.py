"""Timestamps at the API boundary: sandbox time for the controllers, wall time in the API.

The controllers stamp and compare sandbox time, which at speed > 1 runs ahead of wall time; a
``startTime`` in the future makes ``kubectl get jobs`` print DURATION ``<invalid>``. So every
timestamp the driver writes (``status``, ``metadata`` creation/deletion, node taints'
``timeAdded``) is mapped to the wall time at which sandbox time read it, and every timestamp it
reads is mapped back. The API keeps whole seconds only, and one wall second is ``speed`` sandbox
seconds, so the exact sandbox value of each stamp this process wrote is remembered per object,
field and written value: run durations stay exact, and a stamp read back and written again is
unchanged. Stamps written by others (or before a restart) map back at the API's precision.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from kq.sandbox.cluster.actions import Obj, meta
from kq.sandbox.cluster.clock import SandboxClock, parse_rfc3339, rfc3339

_STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
_META_STAMPS = ("creationTimestamp", "deletionTimestamp")
_NUDGE = timedelta(microseconds=5)
"""Absorbs the rounding of the affine map, so a whole wall second maps back onto itself."""

Path = tuple[str | int, ...]
Convert = Callable[[Path, str], str]


@dataclass(frozen=True, slots=True)
class Stamp:
    """One timestamp of a write: where it is, what the API got and what the controller meant."""

    path: Path
    wall: str
    sandbox: str


def _format(moment: datetime) -> str:
    if moment.microsecond == 0:
        return rfc3339(moment)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _walk(value: object, path: Path, convert: Convert) -> object:
    if isinstance(value, str):
        return convert(path, value) if _STAMP.match(value) else value
    if isinstance(value, dict):
        return {k: _walk(v, (*path, k), convert) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, (*path, i), convert) for i, v in enumerate(value)]
    return value


def _convert(obj: Obj, convert: Convert) -> Obj:
    """A copy of ``obj`` (or of a merge patch) with its timestamp fields converted."""
    out = dict(obj)
    m = obj.get("metadata")
    if isinstance(m, dict) and any(isinstance(m.get(k), str) for k in _META_STAMPS):
        out["metadata"] = {k: convert(("metadata", k), v) if k in _META_STAMPS and v else v
                           for k, v in m.items()}  # fmt: skip
    if isinstance(obj.get("status"), dict):
        out["status"] = _walk(obj["status"], ("status",), convert)
    spec = obj.get("spec")
    if isinstance(spec, dict) and isinstance(spec.get("taints"), list):
        out["spec"] = {**spec, "taints": _walk(spec["taints"], ("spec", "taints"), convert)}
    return out


@dataclass(slots=True)
class ApiTime:
    """Converts what the driver writes and reads; remembers exact values per object uid."""

    clock: SandboxClock
    _memo: dict[tuple[str, Path], tuple[str, str]] = field(default_factory=dict)
    _cache: dict[str, tuple[str, Obj]] = field(default_factory=dict)

    def stamp(self, moment: datetime) -> str:
        """The API's whole-second wall stamp for sandbox ``moment``, never in the future."""
        wall = min(self.clock.to_wall(moment) + _NUDGE, self.clock.wall())
        return rfc3339(wall)

    def outgoing(self, body: Obj) -> tuple[Obj, list[Stamp]]:
        """``body`` with wall stamps, and what each stamp stands for (to :meth:`record`)."""
        stamps: list[Stamp] = []

        def to_wall(path: Path, value: str) -> str:
            wall = self.stamp(parse_rfc3339(value))
            stamps.append(Stamp(path, wall, value))
            return wall

        return _convert(body, to_wall), stamps

    def record(self, uid: str, stamps: Collection[Stamp]) -> None:
        """Remember the exact sandbox values written to the object ``uid``."""
        if not uid or not stamps:
            return
        for s in stamps:
            self._memo[(uid, s.path)] = (s.wall, s.sandbox)
        self._cache.pop(uid, None)

    def incoming(self, obj: Obj) -> Obj:
        """``obj`` as the controllers see it: in sandbox time."""
        m = meta(obj)
        uid, version = str(m.get("uid", "")), str(m.get("resourceVersion", ""))
        cached = self._cache.get(uid)
        if cached is not None and cached[0] == version:
            return cached[1]

        def to_sandbox(path: Path, value: str) -> str:
            known = self._memo.get((uid, path))
            if known is not None and known[0] == value:
                return known[1]
            return _format(self.clock.from_wall(parse_rfc3339(value)))

        converted = _convert(obj, to_sandbox)
        if uid:
            self._cache[uid] = (version, converted)
        return converted

    def retain(self, uids: Collection[str]) -> None:
        """Forget the objects that are gone."""
        for key in [k for k in self._memo if k[0] not in uids]:
            del self._memo[key]
        for uid in [u for u in self._cache if u not in uids]:
            del self._cache[uid]
