"""kq's Budget API (``budgets.kq.dev/v1alpha1``): parsing, validation and window arithmetic.

A Budget bounds the resource-time that the workloads admitted to one ClusterQueue, Cohort or
LocalQueue may consume per window. The API is kq's own (Kueue has none), so it lives in the
core where the validating webhook and the accounting plugin both read it; what a Budget does
is the built-in ``budgets`` plugin's business.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kq.api.quantity import QuantityError, is_milli, parse_quantity
from kq.api.timestamps import parse_time
from kq.config import parse_duration

GROUP = "kq.dev"
VERSION = "v1alpha1"
KIND = "Budget"
API_VERSION = f"{GROUP}/{VERSION}"

TARGET_KINDS = ("ClusterQueue", "Cohort", "LocalQueue")
ROLLING, CALENDAR = "Rolling", "Calendar"
WAIT, LOWER_PRIORITY, BORROW = "Wait", "LowerPriority", "Borrow"
POLICIES = (WAIT, LOWER_PRIORITY, BORROW)
"""What a workload the budget cannot afford does: wait; go in at a lower priority (the budget's
``priorityBoost``, negative, added to its priority); or go in only on capacity its ClusterQueue
borrows from its cohort, never by preemption."""
MIN_INT32 = -(2**31)

STANDARD_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage", "pods"})
_QUALIFIED = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+/"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
HOUR = 3600.0


class BudgetError(ValueError):
    """A Budget's spec is invalid; the message names the field."""


@dataclass(frozen=True, slots=True)
class Target:
    kind: str
    name: str
    namespace: str = ""
    """LocalQueue only."""

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name}"


@dataclass(frozen=True, slots=True)
class Window:
    seconds: float
    alignment: str = ROLLING
    anchor: float = 0.0
    """Calendar windows start at ``anchor + k * seconds`` (epoch seconds; default the epoch)."""

    def start(self, now: float) -> float:
        """The start of the window ``now`` is in."""
        if self.alignment == ROLLING:
            return now - self.seconds
        return self.anchor + math.floor((now - self.anchor) / self.seconds) * self.seconds

    def end(self, now: float) -> float | None:
        """When the current calendar window closes; rolling windows never close."""
        return None if self.alignment == ROLLING else self.start(now) + self.seconds


@dataclass(frozen=True, slots=True)
class Budget:
    name: str
    target: Target
    window: Window
    limits: Mapping[str, float]
    """Per resource, the resource-seconds allowed per window, in Kueue units (cpu in milli)."""
    policy: str = WAIT
    priority_boost: int = 0
    """``LowerPriority`` only: the negative boost an over-budget workload is admitted with."""


def resource_name_error(name: str) -> str | None:
    """Why ``name`` is not a resource a Pod can request, or ``None``."""
    if name in STANDARD_RESOURCES or name.startswith("hugepages-") or _QUALIFIED.match(name):
        return None
    return (
        f"unknown resource {name!r}: use cpu, memory, ephemeral-storage, pods, hugepages-<size> "
        "or a domain-qualified extended resource such as google.com/tpu or nvidia.com/gpu"
    )


def parse_budget(obj: Mapping[str, Any]) -> Budget:
    """The Budget in ``obj``; ``BudgetError`` naming the first bad field."""
    spec = obj.get("spec") or {}
    name = str((obj.get("metadata") or {}).get("name", ""))
    return Budget(
        name,
        _target(spec.get("target") or {}),
        _window(spec.get("window") or {}),
        _limits(spec.get("resourceHours") or {}),
        *_policy(spec.get("whenExhausted", WAIT), spec.get("priorityBoost")),
    )


def _target(raw: Mapping[str, Any]) -> Target:
    kind, name = raw.get("kind"), raw.get("name")
    if kind not in TARGET_KINDS:
        raise BudgetError(f"spec.target.kind: must be one of {', '.join(TARGET_KINDS)}")
    if not isinstance(name, str) or not name:
        raise BudgetError("spec.target.name: required")
    namespace = raw.get("namespace") or ""
    if (kind == "LocalQueue") != bool(namespace):
        raise BudgetError("spec.target.namespace: required for a LocalQueue, and only for one")
    return Target(str(kind), name, str(namespace))


def _window(raw: Mapping[str, Any]) -> Window:
    text = raw.get("duration")
    try:
        seconds = parse_duration(text) if isinstance(text, str) else -1.0
    except ValueError:
        seconds = -1.0
    if seconds <= 0:
        raise BudgetError(
            f"spec.window.duration: must be a positive duration such as 720h or 30m, got {text!r}"
        )
    alignment = raw.get("alignment", ROLLING)
    if alignment not in (ROLLING, CALENDAR):
        raise BudgetError(f"spec.window.alignment: must be {ROLLING} or {CALENDAR}")
    anchor = 0.0
    if "start" in raw:
        if alignment != CALENDAR:
            raise BudgetError("spec.window.start: only a Calendar window has a start")
        try:
            anchor = parse_time(raw["start"]) or 0.0
        except ValueError as exc:
            raise BudgetError(f"spec.window.start: not an RFC 3339 time: {exc}") from None
    return Window(seconds, str(alignment), anchor)


def _limits(raw: Mapping[str, Any]) -> dict[str, float]:
    if not raw:
        raise BudgetError("spec.resourceHours: at least one resource is required")
    limits = {}
    for resource, value in raw.items():
        error = resource_name_error(str(resource))
        if error is not None:
            raise BudgetError(f"spec.resourceHours[{resource}]: {error}")
        try:
            hours = parse_quantity(value)
        except QuantityError as exc:
            raise BudgetError(f"spec.resourceHours[{resource}]: {exc}") from None
        if hours < 0:
            raise BudgetError(f"spec.resourceHours[{resource}]: must not be negative")
        scale = 1000 if is_milli(str(resource)) else 1
        limits[str(resource)] = float(hours) * scale * HOUR
    return limits


def _policy(value: object, boost: object) -> tuple[str, int]:
    if value not in POLICIES:
        raise BudgetError(
            f"spec.whenExhausted: {value!r} is not supported; use one of {', '.join(POLICIES)}"
        )
    if value != LOWER_PRIORITY:
        if boost is not None:
            raise BudgetError("spec.priorityBoost: only a LowerPriority budget has one")
        return str(value), 0
    if boost is None:
        raise BudgetError(
            "spec.priorityBoost: required with whenExhausted: LowerPriority (a negative "
            "integer added to an over-budget workload's priority, e.g. -100)"
        )
    if not isinstance(boost, int) or isinstance(boost, bool) or not MIN_INT32 <= boost < 0:
        raise BudgetError(
            f"spec.priorityBoost: must be a negative 32-bit integer such as -100, got {boost!r}"
        )
    return LOWER_PRIORITY, boost


def resource_hours(resource: str, amount_seconds: float) -> float:
    """Resource-seconds in Kueue units as resource-hours in the resource's own unit."""
    return amount_seconds / HOUR / (1000 if is_milli(resource) else 1)
