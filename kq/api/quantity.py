"""Kubernetes quantities as exact integers: cpu in millicores, every other resource in units.

Parsing rounds up like ``Quantity.MilliValue``/``Value``; formatting gives the canonical string
Kubernetes prints (``1500m``, ``2``, ``4Gi``, ``1k``).
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

_PATTERN = re.compile(
    r"^(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+))(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$"
)
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL_SUFFIXES = ("", "k", "M", "G", "T", "P", "E")

MILLI_RESOURCES = frozenset({"cpu"})
"""Resources Kueue accounts in milli-units; all others are counted in whole units."""

_BINARY_RESOURCES = ("memory", "ephemeral-storage", "hugepages-")


class QuantityError(ValueError):
    """The string is not a Kubernetes quantity."""


def parse_quantity(value: object) -> Fraction:
    """The exact value of a quantity string (or a YAML number) as a fraction."""
    if isinstance(value, int) and not isinstance(value, bool):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(str(value))
    if not isinstance(value, str):
        raise QuantityError(f"quantities must be strings or numbers, not {value!r}")
    match = _PATTERN.match(value.strip())
    if match is None:
        raise QuantityError(f"quantities must match the regular expression, got {value!r}")
    number = Fraction(match["num"])
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        return number * Fraction(1024) ** _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * Fraction(10) ** _DECIMAL[suffix]
    return number * Fraction(10) ** int(suffix[1:])


def is_milli(resource: str) -> bool:
    return resource in MILLI_RESOURCES


def to_amount(resource: str, value: object) -> int:
    """The integer Kueue stores for ``resource``: ceil of the value (in thousandths for cpu)."""
    if isinstance(value, str):
        return _string_amount(resource, value)
    return _amount(resource, value)


def _amount(resource: str, value: object) -> int:
    exact = parse_quantity(value)
    return math.ceil(exact * 1000) if is_milli(resource) else math.ceil(exact)


# Every Workload event carries the same few quantity strings again; Fractions are slow.
_string_amount = functools.lru_cache(maxsize=4096)(_amount)


def _canonical(value: int, suffixes: tuple[str, ...], base: int) -> str:
    if value == 0:
        return "0"
    exponent = 0
    while exponent + 1 < len(suffixes) and value % base ** (exponent + 1) == 0:
        exponent += 1
    return f"{value // base**exponent}{suffixes[exponent]}"


def _format_amount(resource: str, amount: int) -> str:
    if is_milli(resource):
        if amount % 1000:
            return f"{amount}m"
        return _canonical(amount // 1000, _DECIMAL_SUFFIXES, 1000)
    if resource.startswith(_BINARY_RESOURCES) and amount % 1024 == 0:
        return _canonical(amount, _BINARY_SUFFIXES, 1024)
    return _canonical(amount, _DECIMAL_SUFFIXES, 1000)


format_amount = functools.lru_cache(maxsize=4096)(_format_amount)
"""The canonical quantity string for an amount of ``resource``. Cached: every head that does
not fit says how much more it needs, and the amounts repeat."""
