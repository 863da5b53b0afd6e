"""The JSONPath subset used by kubectl ``-o jsonpath`` and CRD printer columns.

Contract: ``evaluate(expression, obj)`` returns every value the path selects, in
document order.  Supported: optional surrounding ``{...}``, an optional leading ``$``,
``.a.b``, ``['key']`` / ``["key"]``, ``[0]``, ``[-1]``, ``[a:b]`` slices, ``[*]`` and
``.*``, ``..name`` recursive descent, and filters ``[?(@.a.b == "x")]`` with ``==``,
``!=``, ``<``, ``<=``, ``>``, ``>=`` against string (either quote) or number literals,
or ``[?(@.a)]`` for existence.  A path that does not exist selects nothing (``[]``),
never an exception; ``JsonPathError`` is raised only for syntax errors.  Not supported:
unions (``['a','b']``), ``range``/``end`` templates, literal text around braces.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["JsonPathError", "evaluate", "parse"]


class JsonPathError(ValueError):
    """A JSONPath expression that does not parse."""


@dataclass(frozen=True)
class _Field:
    name: str  # "*" selects every value


@dataclass(frozen=True)
class _Recursive:
    # Field to pick at every depth; "*" for every child, "" for every node (before "[").
    name: str


@dataclass(frozen=True)
class _Index:
    start: int | None
    stop: int | None
    single: bool  # [n] versus a slice or [*]


@dataclass(frozen=True)
class _Filter:
    path: tuple[_Step, ...]
    op: str | None  # None means "the path exists"
    literal: Any


_Step = _Field | _Recursive | _Index | _Filter

_IDENT = re.compile(r"[A-Za-z0-9_\-/$]+")
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def error(self, what: str) -> JsonPathError:
        return JsonPathError(f"unrecognized jsonpath {what} at {self.pos}: {self.text!r}")

    def peek(self, n: int = 1) -> str:
        return self.text[self.pos : self.pos + n]

    def steps(self, stop: str = "") -> tuple[_Step, ...]:
        out: list[_Step] = []
        while self.pos < len(self.text) and self.peek() not in stop:
            if self.peek(2) == "..":
                self.pos += 2
                if self.peek() == "[":
                    out.append(_Recursive(""))
                else:
                    out.append(_Recursive(self.name()))
            elif self.peek() == ".":
                self.pos += 1
                if self.pos >= len(self.text) or self.peek() in stop:
                    continue  # a lone "." selects the current object
                out.append(_Field(self.name()))
            elif self.peek() == "[":
                out.append(self.bracket())
            else:
                raise self.error("character")
        return tuple(out)

    def name(self) -> str:
        if self.peek() == "*":
            self.pos += 1
            return "*"
        m = _IDENT.match(self.text, self.pos)
        if not m:
            raise self.error("field name")
        self.pos = m.end()
        return m.group()

    def skip_space(self) -> None:
        while self.peek().isspace() and self.peek():
            self.pos += 1

    def bracket(self) -> _Step:
        self.pos += 1
        self.skip_space()
        step: _Step
        if self.peek(2) == "?(":
            self.pos += 2
            step = self.filter()
        elif self.peek() in ("'", '"'):
            step = _Field(self.string())
        elif self.peek() == "*":
            self.pos += 1
            step = _Index(None, None, False)
        else:
            step = self.index()
        self.skip_space()
        if self.peek() != "]":
            raise self.error("bracket")
        self.pos += 1
        return step

    def integer(self) -> int | None:
        m = re.compile(r"-?[0-9]+").match(self.text, self.pos)
        if not m:
            return None
        self.pos = m.end()
        return int(m.group())

    def index(self) -> _Index:
        start = self.integer()
        if self.peek() != ":":
            if start is None:
                raise self.error("index")
            return _Index(start, None, True)
        self.pos += 1
        stop = self.integer()
        return _Index(start, stop, False)

    def string(self) -> str:
        quote = self.peek()
        end = self.text.find(quote, self.pos + 1)
        if end < 0:
            raise self.error("string")
        value = self.text[self.pos + 1 : end]
        self.pos = end + 1
        return value

    def filter(self) -> _Filter:
        self.skip_space()
        if self.peek() != "@":
            raise self.error("filter")
        self.pos += 1
        path = self.steps(stop=" =!<>)")
        self.skip_space()
        m = re.compile(r"==|!=|<=|>=|<|>").match(self.text, self.pos)
        op: str | None = None
        literal: Any = None
        if m:
            op = m.group()
            self.pos = m.end()
            self.skip_space()
            if self.peek() in ("'", '"'):
                literal = self.string()
            else:
                num = _NUMBER.match(self.text, self.pos)
                if not num:
                    raise self.error("filter literal")
                self.pos = num.end()
                text = num.group()
                literal = float(text) if any(c in text for c in ".eE") else int(text)
            self.skip_space()
        if self.peek() != ")":
            raise self.error("filter")
        self.pos += 1
        return _Filter(path, op, literal)


def parse(expression: str) -> tuple[_Step, ...]:
    """Parse ``expression`` (braces optional); raise ``JsonPathError`` when invalid."""
    text = expression.strip()
    if text.startswith("{"):
        if not text.endswith("}"):
            raise JsonPathError(f"unclosed action: {expression!r}")
        text = text[1:-1].strip()
    if text.startswith("$"):
        text = text[1:]
    return _Parser(text).steps()


def _children(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, list):
        return list(value)
    return []


def _descendants(value: Any) -> Iterator[Any]:
    yield value
    for child in _children(value):
        yield from _descendants(child)


def _compare(left: Any, op: str, right: Any) -> bool:
    if isinstance(left, bool) or isinstance(right, bool):
        comparable = isinstance(left, bool) and isinstance(right, bool)
    else:
        comparable = isinstance(left, str) == isinstance(right, str) and isinstance(
            left, str | int | float
        )
    if op == "==":
        return comparable and left == right
    if op == "!=":
        return not (comparable and left == right)
    if not comparable or isinstance(left, bool):
        return False
    if op == "<":
        return bool(left < right)
    if op == "<=":
        return bool(left <= right)
    if op == ">":
        return bool(left > right)
    return bool(left >= right)


def _apply(step: _Step, values: list[Any]) -> list[Any]:
    return [found for value in values for found in _select(step, value)]


def _select(step: _Step, value: Any) -> list[Any]:
    """What one step selects from one value."""
    if isinstance(step, _Field):
        return _field(step.name, value)
    if isinstance(step, _Recursive):
        nodes = _descendants(value)
        return list(nodes) if not step.name else [f for n in nodes for f in _field(step.name, n)]
    if isinstance(step, _Index):
        return _index(step, value)
    return _filter(step, value)


def _field(name: str, value: Any) -> list[Any]:
    if name == "*":
        return _children(value)
    return [value[name]] if isinstance(value, dict) and name in value else []


def _index(step: _Index, value: Any) -> list[Any]:
    if not isinstance(value, list):
        # [*] (no bounds) also selects a map's values.
        wildcard = step.start is None and step.stop is None
        return list(value.values()) if wildcard and isinstance(value, dict) else []
    if not step.single:
        return value[step.start : step.stop]
    assert step.start is not None
    return [value[step.start]] if -len(value) <= step.start < len(value) else []


def _filter(step: _Filter, value: Any) -> list[Any]:
    if not isinstance(value, list):
        return []
    return [item for item in value if _matches(step, item)]


def _matches(step: _Filter, item: Any) -> bool:
    found = _run(step.path, item)
    if step.op is None:
        return bool(found)
    return any(_compare(f, step.op, step.literal) for f in found)


def _run(steps: tuple[_Step, ...], obj: Any) -> list[Any]:
    values = [obj]
    for step in steps:
        values = _apply(step, values)
        if not values:
            break
    return values


def evaluate(expression: str, obj: Any) -> list[Any]:
    """Every value ``expression`` selects in ``obj``; ``[]`` when the path is missing."""
    return _run(parse(expression), obj)
