"""Field selectors: ``f=v``, ``f==v`` and ``f!=v`` terms with escaped values."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from kq.sandbox.apiserver.selectors.labels import SelectorError

FieldOperator = Literal["=", "!="]


def escape_field_value(value: str) -> str:
    """Escape ``\\``, ``,`` and ``=`` for use in a field selector value."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def _unescape_field_value(value: str) -> str:
    out: list[str] = []
    escaped = False
    for c in value:
        if escaped:
            if c not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{c}")
            out.append(c)
            escaped = False
        elif c == "\\":
            escaped = True
        elif c in ",=":
            raise SelectorError(f"invalid field selector: unescaped character in value: {c}")
        else:
            out.append(c)
    if escaped:
        raise SelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_terms(text: str) -> list[str]:
    terms: list[str] = []
    start = 0
    escaped = False
    for i, c in enumerate(text):
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


@dataclass(frozen=True)
class FieldSelector:
    """A conjunction of ``(field, operator, value)``; ``==`` is normalised to ``=``."""

    requirements: tuple[tuple[str, FieldOperator, str], ...] = ()

    def matches(self, fields: Mapping[str, str]) -> bool:
        """Whether ``fields`` satisfy every term; a missing field reads as ``""``."""
        for field, op, value in self.requirements:
            if (fields.get(field, "") == value) != (op == "="):
                return False
        return True

    def empty(self) -> bool:
        """True for the select-everything selector."""
        return not self.requirements

    def fields(self) -> frozenset[str]:
        """Field names referenced, for whitelist checks (``field label not supported``)."""
        return frozenset(f for f, _, _ in self.requirements)

    def __str__(self) -> str:
        return ",".join(f"{f}{op}{escape_field_value(v)}" for f, op, v in self.requirements)


def parse_field_selector(text: str) -> FieldSelector:
    """Parse the ``fieldSelector`` query syntax; raise ``SelectorError`` when invalid."""
    if not text:
        return FieldSelector()
    reqs: list[tuple[str, FieldOperator, str]] = []
    for term in sorted(_split_terms(text)):
        if not term:
            continue
        # The field name cannot be escaped, so the first operator occurrence splits.
        for i in range(len(term)):
            rest = term[i:]
            op = next((o for o in ("!=", "==", "=") if rest.startswith(o)), None)
            if op is not None:
                field, raw = term[:i], term[i + len(op) :]
                break
        else:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{term}'")
        reqs.append((field, "!=" if op == "!=" else "=", _unescape_field_value(raw)))
    return FieldSelector(tuple(reqs))
