"""Label and field selectors with kube-apiserver semantics.

Contract:

* ``parse_label_selector(text)`` parses the ``labelSelector`` query syntax: ``a=b``,
  ``a==b``, ``a!=b``, ``a in (x,y)``, ``a notin (x)``, ``a`` (exists), ``!a`` (does not
  exist), ``a>1`` / ``a<1`` (integer comparison), joined by commas.  Keys and values are
  validated like Kubernetes (qualified names, label values).  The empty string selects
  everything.
* ``label_selector_from_object(obj)`` converts a ``metav1.LabelSelector`` dict
  (``matchLabels`` / ``matchExpressions``).  ``{}`` selects everything; ``None`` (a
  missing selector field) selects nothing, as upstream ``LabelSelectorAsSelector``.
* ``parse_field_selector(text)`` parses ``f=v``, ``f==v``, ``f!=v`` joined by commas,
  with ``\\``-escaping of ``\\``, ``,`` and ``=`` in values.  A missing field reads as the
  empty string, so ``f=`` matches objects without ``f``.
* Every parse failure raises ``SelectorError`` (a ``ValueError``); the server answers 400.
* ``str()`` of a selector gives the canonical text, which parses back to an equal value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "FieldSelector",
    "LabelRequirement",
    "LabelSelector",
    "SelectorError",
    "escape_field_value",
    "label_selector_from_object",
    "parse_field_selector",
    "parse_label_selector",
    "validate_label_key",
    "validate_label_value",
]

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


_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")
_KEYWORDS = frozenset({"in", "notin"})
_IDENT = "identifier"
_END = "end"


def _quote(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def _lex(text: str) -> list[tuple[str, str]]:
    """Tokens as ``(kind, literal)``; kind is a symbol, a keyword, ``identifier`` or ``end``."""
    tokens: list[tuple[str, str]] = []
    i = 0
    while True:
        while i < len(text) and text[i] in _WHITESPACE:
            i += 1
        if i >= len(text):
            tokens.append((_END, ""))
            return tokens
        if text[i] in _SPECIAL:
            # Every special character is a symbol; "!=" and "==" are the two-character ones.
            symbol = text[i : i + 2] if text[i : i + 2] in ("!=", "==") else text[i]
            tokens.append((symbol, symbol))
            i += len(symbol)
            continue
        j = i
        while j < len(text) and text[j] not in _SPECIAL and text[j] not in _WHITESPACE:
            j += 1
        word = text[i:j]
        tokens.append((word if word in _KEYWORDS else _IDENT, word))
        i = j


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _lex(text)
        self.pos = 0

    def peek(self, values: bool = True) -> tuple[str, str]:
        kind, lit = self.tokens[self.pos]
        # Where a value is expected, "in" and "notin" are plain identifiers.
        return (_IDENT, lit) if values and kind in _KEYWORDS else (kind, lit)

    def take(self, values: bool = True) -> tuple[str, str]:
        token = self.peek(values)
        self.pos = min(self.pos + 1, len(self.tokens) - 1)
        return token

    def selector(self) -> list[LabelRequirement]:
        reqs: list[LabelRequirement] = []
        while True:
            kind, lit = self.peek()
            if kind == _END:
                return reqs
            if kind not in (_IDENT, "!"):
                raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")
            try:
                reqs.append(self.requirement())
            except SelectorError as exc:
                raise SelectorError(f"unable to parse requirement: {exc}") from None
            kind, lit = self.take()
            if kind == _END:
                return reqs
            if kind != ",":
                raise SelectorError(f"found '{lit}', expected: ',' or 'end of string'")
            kind, lit = self.peek()
            if kind not in (_IDENT, "!"):
                raise SelectorError(f"found '{lit}', expected: identifier after ','")

    def requirement(self) -> LabelRequirement:
        kind, key = self.take()
        negated = kind == "!"
        if negated:
            kind, key = self.take()
        if kind != _IDENT:
            raise SelectorError(f"found '{key}', expected: identifier")
        errs = validate_label_key(key)
        if errs:
            raise SelectorError(f"key: Invalid value: {_quote(key)}: {'; '.join(errs)}")
        if negated or self.peek()[0] in (_END, ","):
            return LabelRequirement(key, "!" if negated else "exists")
        kind, lit = self.take(values=False)
        if kind in ("in", "notin"):
            return LabelRequirement(key, kind, self.value_list())  # type: ignore[arg-type]
        operator: LabelOperator
        if kind in ("=", "=="):
            operator = "="
        elif kind == "!=":
            operator = "!="
        elif kind == ">":
            operator = "gt"
        elif kind == "<":
            operator = "lt"
        else:
            raise SelectorError(f"found '{lit}', expected: in, notin, =, ==, !=, gt, lt")
        return LabelRequirement(key, operator, (self.exact_value(),))

    def exact_value(self) -> str:
        if self.peek()[0] in (_END, ","):
            return ""
        kind, lit = self.take()
        if kind != _IDENT:
            raise SelectorError(f"found '{lit}', expected: identifier")
        return lit

    def value_list(self) -> tuple[str, ...]:
        kind, lit = self.take()
        if kind != "(":
            raise SelectorError(f"found '{lit}' expected: '('")
        kind, lit = self.peek()
        if kind == ")":
            self.take()
            return ("",)
        if kind not in (_IDENT, ","):
            raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")
        values: set[str] = set()
        while True:
            kind, lit = self.take()
            if kind == _IDENT:
                values.add(lit)
                nxt, nlit = self.peek()
                if nxt == ")":
                    break
                if nxt != ",":
                    raise SelectorError(f"found '{nlit}', expected: ',' or ')'")
            elif kind == ",":
                # Empty entries ("(,a", "a,)", "a,,b") stand for the empty value.
                nxt = self.peek()[0]
                if not values or nxt in (")", ","):
                    values.add("")
                if nxt == ")":
                    break
            else:
                raise SelectorError(f"found '{lit}', expected: ',', or identifier")
        self.take()
        return tuple(values)


def parse_label_selector(text: str) -> LabelSelector:
    """Parse the ``labelSelector`` query syntax; raise ``SelectorError`` when invalid."""
    return _selector(_Parser(text).selector())


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
