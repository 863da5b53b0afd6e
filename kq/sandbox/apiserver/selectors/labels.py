"""Label requirements and selectors, validated like Kubernetes, and ``metav1.LabelSelector``."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

LabelOperator = Literal["=", "!=", "in", "notin", "exists", "!", "gt", "lt"]


class SelectorError(ValueError):
    """A selector that does not parse or does not validate."""


_INTEGER = re.compile(r"[-+]?[0-9]+")
_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_VALUE_FMT = "(" + _NAME_FMT + ")?"
_DNS1123_SUBDOMAIN_RE = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
    "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    f"validation is '{_NAME_FMT}')"
)


def validate_label_key(key: str) -> list[str]:
    """Problems with ``key`` as a label key (a qualified name), upstream wording."""
    errs: list[str] = []
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        elif len(prefix) > 253:
            errs.append("prefix part must be no more than 253 bytes")
        elif not _DNS1123_SUBDOMAIN_RE.match(prefix):
            errs.append(
                "prefix part a lowercase RFC 1123 subdomain must consist of lower case "
                "alphanumeric characters, '-' or '.', and must start and end with an "
                "alphanumeric character"
            )
    else:
        return [
            "a valid label key " + _NAME_MSG + " with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 bytes")
    if not _NAME_RE.match(name):
        errs.append("name part " + _NAME_MSG)
    return errs


def validate_label_value(value: str) -> list[str]:
    """Problems with ``value`` as a label value, upstream wording."""
    errs: list[str] = []
    if len(value) > 63:
        errs.append("must be no more than 63 bytes")
    if value and not _NAME_RE.match(value):
        errs.append(
            "a valid label must be an empty string or consist of alphanumeric characters, "
            "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
            f"'MyValue',  or 'my_value',  or '12345', regex used for validation is '{_VALUE_FMT}')"
        )
    return errs


@dataclass(frozen=True, order=True)
class LabelRequirement:
    """One ``key op values`` term; ``values`` is sorted and de-duplicated."""

    key: str
    operator: LabelOperator
    values: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Upstream collects every problem and reports them together.
        errs: list[str] = []
        key_errs = validate_label_key(self.key)
        if key_errs:
            errs.append(f"key: Invalid value: {_quote(self.key)}: {'; '.join(key_errs)}")
        op, values = self.operator, self.values
        shown = "[" + ",".join(_quote(v) for v in values) + "]"
        if op in ("in", "notin") and not values:
            errs.append(
                f"values: Invalid value: {shown}: "
                "for 'in', 'notin' operators, values set can't be empty"
            )
        elif op in ("=", "!=") and len(values) != 1:
            errs.append(
                f"values: Invalid value: {shown}: "
                "exact-match compatibility requires one single value"
            )
        elif op in ("exists", "!") and values:
            errs.append(
                f"values: Invalid value: {shown}: "
                "values set must be empty for exists and does not exist"
            )
        elif op in ("gt", "lt"):
            if len(values) != 1:
                errs.append(
                    f"values: Invalid value: {shown}: "
                    "for 'Gt', 'Lt' operators, exactly one value is required"
                )
            errs.extend(
                f"values[{i}]: Invalid value: {_quote(v)}: "
                "for 'Gt', 'Lt' operators, the value must be an integer"
                for i, v in enumerate(values)
                if not _INTEGER.fullmatch(v)
            )
        for i, v in enumerate(values):
            value_errs = validate_label_value(v)
            if value_errs:
                errs.append(
                    f"values[{i}][{self.key}]: Invalid value: {_quote(v)}: {'; '.join(value_errs)}"
                )
        if errs:
            raise SelectorError(errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]")
        object.__setattr__(self, "values", tuple(sorted(set(values))))

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy this requirement."""
        op = self.operator
        present = self.key in labels
        if op == "exists":
            return present
        if op == "!":
            return not present
        if op in ("=", "in"):
            return present and labels[self.key] in self.values
        if op in ("!=", "notin"):
            return not present or labels[self.key] not in self.values
        # Like Go's ParseInt: Python's int() would also take "1_000" or " 1".
        if not present or not _INTEGER.fullmatch(labels[self.key]):
            return False
        have, want = int(labels[self.key]), int(self.values[0])
        return have > want if op == "gt" else have < want

    def __str__(self) -> str:
        op = self.operator
        if op == "exists":
            return self.key
        if op == "!":
            return "!" + self.key
        if op in ("in", "notin"):
            return f"{self.key} {op} ({','.join(self.values)})"
        symbol = {"gt": ">", "lt": "<"}.get(op, op)
        return f"{self.key}{symbol}{self.values[0]}"


@dataclass(frozen=True)
class LabelSelector:
    """A conjunction of requirements; ``nothing=True`` is the selector that selects nothing."""

    requirements: tuple[LabelRequirement, ...] = ()
    nothing: bool = False

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy every requirement."""
        if self.nothing:
            return False
        return all(r.matches(labels) for r in self.requirements)

    def empty(self) -> bool:
        """True for the select-everything selector."""
        return not self.nothing and not self.requirements

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def _selector(requirements: Iterable[LabelRequirement]) -> LabelSelector:
    # Sorted like upstream so equal selectors print identically.
    return LabelSelector(tuple(sorted(requirements, key=lambda r: (r.key, r.operator, r.values))))


def _quote(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


_EXPR_OPS: dict[str, LabelOperator] = {
    "In": "in",
    "NotIn": "notin",
    "Exists": "exists",
    "DoesNotExist": "!",
}


def label_selector_from_object(obj: Mapping[str, Any] | None) -> LabelSelector:
    """Convert a ``metav1.LabelSelector`` dict; ``None`` selects nothing, ``{}`` everything."""
    if obj is None:
        return LabelSelector(nothing=True)
    reqs: list[LabelRequirement] = []
    for key, value in (obj.get("matchLabels") or {}).items():
        if not isinstance(value, str):
            raise SelectorError(f"matchLabels[{key}]: value must be a string")
        reqs.append(LabelRequirement(key, "=", (value,)))
    for expr in obj.get("matchExpressions") or []:
        op = expr.get("operator")
        if op not in _EXPR_OPS:
            raise SelectorError(f'"{op}" is not a valid label selector operator')
        values = expr.get("values") or []
        if not all(isinstance(v, str) for v in values):
            raise SelectorError(f"matchExpressions[{expr.get('key')}]: values must be strings")
        reqs.append(LabelRequirement(str(expr.get("key", "")), _EXPR_OPS[op], tuple(values)))
    return _selector(reqs)
