"""Values as the API server checks and reports them: field errors printed as Go prints them,
JSON types and equality, string formats and Go (RE2) patterns."""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from dataclasses import dataclass
from typing import Any

REASONS = frozenset(
    {
        "FieldValueRequired",
        "FieldValueInvalid",
        "FieldValueNotSupported",
        "FieldValueTypeInvalid",
        "FieldValueDuplicate",
        "FieldValueTooLong",
        "FieldValueTooMany",
        "FieldValueForbidden",
    }
)


@dataclass(frozen=True)
class FieldError:
    """One validation failure; ``message`` is the body without the field name."""

    field: str
    reason: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


def _go_float(value: float) -> str:
    # Go's %v prints floats in shortest form with an exponent only from 1e21 on.
    if math.isinf(value) or math.isnan(value):
        return {math.inf: "+Inf", -math.inf: "-Inf"}.get(value, "NaN")
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    if "e" in text:
        mantissa, exp = text.split("e")
        sign = "-" if exp.startswith("-") else "+"
        digits = exp.lstrip("+-").rjust(2, "0")
        text = f"{mantissa}e{sign}{digits}"
    return text


def format_value(value: Any) -> str:
    """A value as Go's field errors print it (``%q`` strings, ``%v`` scalars, else JSON)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def _invalid(field: str, value: Any, detail: str) -> FieldError:
    return FieldError(field, "FieldValueInvalid", f"Invalid value: {format_value(value)}: {detail}")


def _type_invalid(field: str, value: Any, detail: str) -> FieldError:
    return FieldError(
        field, "FieldValueTypeInvalid", f"Invalid value: {format_value(value)}: {detail}"
    )


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _type_matches(value: Any, types: tuple[str, ...]) -> bool:
    actual = _json_type(value)
    if actual in types:
        return True
    if actual == "integer" and "number" in types:
        return True
    return actual == "number" and "integer" in types and float(value).is_integer()


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(_equal, a, b))
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and bool(a == b)


_DATE_TIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?$"
)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_UUID = re.compile(
    r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"
)


def _valid_byte(value: str) -> bool:
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


# String formats checked; others (numeric ones included) only type-check, like upstream.
_FORMATS = {
    "date-time": lambda s: bool(_DATE_TIME.match(s)),
    "datetime": lambda s: bool(_DATE_TIME.match(s)),
    "date": lambda s: bool(_DATE.match(s)),
    "uuid": lambda s: bool(_UUID.match(s)),
    "byte": _valid_byte,
}

_GO_FLAGS = re.compile(r"\(\?([imsU]+)\)")


def compile_go_regex(pattern: str) -> re.Pattern[str]:
    """Compile an RE2 (Go) pattern with Python's ``re``.

    RE2 allows flag groups such as ``(?i)`` anywhere, scoped to the enclosing group;
    Python wants them first, so each becomes a scoped group ``(?i:...)`` closed where its
    enclosing group closes.  ``\\z`` (end of text) becomes ``\\Z``.
    """
    out: list[str] = []
    pending = [0]  # scoped groups to close, per nesting level
    i = 0
    in_class = False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append("\\Z" if pattern[i + 1] == "z" and not in_class else pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
            out.append(c)
        elif c == "[":
            in_class = True
            out.append(c)
            if pattern.startswith("]", i + 1) or pattern.startswith("^]", i + 1):
                skip = 2 if pattern[i + 1] == "]" else 3
                out.append(pattern[i + 1 : i + skip])
                i += skip
                continue
        elif (m := _GO_FLAGS.match(pattern, i)) is not None:
            flags = m.group(1).replace("U", "")
            if flags:
                out.append(f"(?{flags}:")
                pending[-1] += 1
            i = m.end()
            continue
        elif c == "(":
            pending.append(0)
            out.append(c)
        elif c == ")" and len(pending) > 1:
            out.append(")" * pending.pop())
            out.append(c)
        else:
            out.append(c)
        i += 1
    out.append(")" * pending[0])
    return re.compile("".join(out))
