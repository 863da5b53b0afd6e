"""The ``labelSelector`` query syntax: a lexer and a recursive-descent parser, as upstream's."""

from __future__ import annotations

from kq.sandbox.apiserver.selectors.labels import (
    LabelOperator,
    LabelRequirement,
    LabelSelector,
    SelectorError,
    _quote,
    _selector,
    validate_label_key,
)

_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")
_KEYWORDS = frozenset({"in", "notin"})
_IDENT = "identifier"
_END = "end"


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
