"""Validation of a value against its ``Schema``, in kube-openapi's order and wording."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from kq.sandbox.apiserver.schema.values import (
    _FORMATS,
    FieldError,
    _equal,
    _invalid,
    _json_type,
    _type_invalid,
    _type_matches,
    format_value,
)
from kq.sandbox.apiserver.schema.walks import _join

if TYPE_CHECKING:
    from kq.sandbox.apiserver.schema.node import Schema


def _scalar_passes(x: str | float, s: Schema) -> bool:
    """Whether ``x``, of a type in ``s._quick``, meets every check of ``s``."""
    if isinstance(x, str):
        return (
            (s._max_length is None or len(x) <= s._max_length)
            and (s._min_length is None or len(x) >= s._min_length)
            and (s.pattern is None or s.pattern.search(x) is not None)
            and (s._format_check is None or s._format_check(x))
            and (s._enum_strings is None or x in s._enum_strings)
        )
    maximum, minimum = s._maximum, s._minimum
    return (maximum is None or (x < maximum if s._exclusive_maximum else x <= maximum)) and (
        minimum is None or (x > minimum if s._exclusive_minimum else x >= minimum)
    )


def _field(path: str) -> str:
    return path or "<nil>"


def _validate(
    x: Any,
    s: Schema,
    path: str,
    errs: list[FieldError],
    dups: list[FieldError] | None = None,
    unchanged: Collection[str] = (),
) -> None:
    """kube-openapi's order: type, junctors, string, format, number, array, enum, object.

    As upstream, a type mismatch does not stop the other checks; a null only meets the
    type and enum checks.  ``dups`` gets the ``set``/``map`` list duplicates, which
    apiextensions finds in a separate pass after the schema checks: that pass visits the
    same values in the same order (junctor branches aside, which get ``None``).
    """
    if x is None:
        if not s.nullable:
            if s._types:
                detail = f'{path} in body must be of type {",".join(s._types)}: "null"'
                errs.append(_type_invalid(_field(path), "null", detail))
            _validate_enum(x, s, path, errs)
        return
    if s._types and type(x) not in s._type_ok and not _type_matches(x, s._types):
        actual = _json_type(x)
        detail = f'{path} in body must be of type {",".join(s._types)}: "{actual}"'
        errs.append(_type_invalid(_field(path), actual, detail))
    if s._junctors:
        _validate_junctors(x, s, path, errs)
    if isinstance(x, str):
        if s._string_checks:
            _validate_string(x, s, path, errs)
    elif isinstance(x, int | float) and not isinstance(x, bool):
        if s._number_checks:
            _validate_number(x, s, path, errs)
    elif isinstance(x, list):
        _validate_array(x, s, path, errs, dups)
    if s._enum is not None:
        _validate_enum(x, s, path, errs)
    if isinstance(x, dict):
        _validate_object(x, s, path, errs, dups, unchanged)


def _validate_enum(x: Any, s: Schema, path: str, errs: list[FieldError]) -> None:
    enum = s._enum
    if enum is None or any(_equal(x, e) for e in enum):
        return
    allowed = [e if isinstance(e, str) else format_value(e) for e in enum]
    detail = "supported values: " + ", ".join(json.dumps(a) for a in allowed)
    errs.append(
        FieldError(
            _field(path),
            "FieldValueNotSupported",
            f"Unsupported value: {format_value(x)}: {detail}",
        )
    )


def _validate_string(x: str, s: Schema, path: str, errs: list[FieldError]) -> None:
    raw = s.raw
    # kube-openapi counts characters (runes), while the error message says bytes.
    if "maxLength" in raw and len(x) > raw["maxLength"]:
        unit = "byte" if raw["maxLength"] == 1 else "bytes"
        errs.append(
            FieldError(
                _field(path),
                "FieldValueTooLong",
                f"Too long: may not be more than {raw['maxLength']} {unit}",
            )
        )
    if "minLength" in raw and len(x) < raw["minLength"]:
        errs.append(
            _invalid(
                _field(path), x, f"{path} in body should be at least {raw['minLength']} chars long"
            )
        )
    if s.pattern is not None and not s.pattern.search(x):
        errs.append(_invalid(_field(path), x, f"{path} in body should match '{s.pattern.pattern}'"))
    fmt = raw.get("format")
    check = _FORMATS.get(fmt) if isinstance(fmt, str) else None
    if check is not None and not check(x):
        errs.append(
            _type_invalid(
                _field(path), x, f"{path} in body must be of type {fmt}: {format_value(x)}"
            )
        )


def _validate_number(x: float, s: Schema, path: str, errs: list[FieldError]) -> None:
    raw = s.raw
    if "maximum" in raw:
        limit = raw["maximum"]
        if raw.get("exclusiveMaximum") and x >= limit:
            errs.append(
                _invalid(
                    _field(path), x, f"{path} in body should be less than {format_value(limit)}"
                )
            )
        elif x > limit:
            errs.append(
                _invalid(
                    _field(path),
                    x,
                    f"{path} in body should be less than or equal to {format_value(limit)}",
                )
            )
    if "minimum" in raw:
        limit = raw["minimum"]
        if raw.get("exclusiveMinimum") and x <= limit:
            errs.append(
                _invalid(
                    _field(path), x, f"{path} in body should be greater than {format_value(limit)}"
                )
            )
        elif x < limit:
            errs.append(
                _invalid(
                    _field(path),
                    x,
                    f"{path} in body should be greater than or equal to {format_value(limit)}",
                )
            )
    factor = raw.get("multipleOf")
    if isinstance(factor, int | float) and factor > 0:
        quotient = x / factor
        if not math.isclose(quotient, round(quotient), rel_tol=0, abs_tol=1e-9):
            errs.append(
                _invalid(
                    _field(path),
                    x,
                    f"{path} in body should be a multiple of {format_value(factor)}",
                )
            )


def _validate_array(
    x: list[Any], s: Schema, path: str, errs: list[FieldError], dups: list[FieldError] | None
) -> None:
    if s._array_checks:
        _validate_array_bounds(x, s, path, errs)
    if dups is not None and s._list_dups:
        _validate_list_type(x, s, path, dups)
    items = s.items
    if items is not None:
        for i, item in enumerate(x):
            t = type(item)
            if t in items._fast or (t in items._quick and _scalar_passes(item, items)):
                continue
            _validate(item, items, f"{path}[{i}]", errs, dups)


def _validate_array_bounds(x: list[Any], s: Schema, path: str, errs: list[FieldError]) -> None:
    raw = s.raw
    if "maxItems" in raw and len(x) > raw["maxItems"]:
        unit = "item" if raw["maxItems"] == 1 else "items"
        errs.append(
            FieldError(
                _field(path),
                "FieldValueTooMany",
                f"Too many: {len(x)}: must have at most {raw['maxItems']} {unit}",
            )
        )
    if "minItems" in raw and len(x) < raw["minItems"]:
        # kube-openapi reports the list's length as the value, not the list.
        detail = f"{path} in body should have at least {raw['minItems']} items"
        errs.append(_invalid(_field(path), len(x), detail))
    if raw.get("uniqueItems") and any(_equal(a, b) for i, a in enumerate(x) for b in x[i + 1 :]):
        errs.append(_invalid(_field(path), x, f"{path} in body shouldn't contain duplicates"))


def _validate_list_type(x: list[Any], s: Schema, path: str, errs: list[FieldError]) -> None:
    seen: list[Any] = []
    for i, item in enumerate(x):
        if s.list_type == "set":
            key: Any = item
        elif s.list_type == "map" and isinstance(item, dict):
            key = {k: item[k] for k in s.list_map_keys if k in item}
        else:
            continue
        if any(_equal(key, other) for other in seen):
            errs.append(
                FieldError(
                    f"{path}[{i}]", "FieldValueDuplicate", f"Duplicate value: {format_value(key)}"
                )
            )
        else:
            seen.append(key)


_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_GROUP_VERSION = re.compile(r"^([^/]+/)?[^/]+$")


def _validate_embedded(x: dict[str, Any], path: str, errs: list[FieldError]) -> None:
    """apiVersion and kind of an ``x-kubernetes-embedded-resource`` object."""
    for key in ("apiVersion", "kind"):
        if key not in x:
            errs.append(FieldError(_join(path, key), "FieldValueRequired", "Required value"))
            continue
        value, field = x[key], _join(path, key)
        if not isinstance(value, str):
            errs.append(_invalid(field, value, "must be a string"))
        elif not value:
            errs.append(_invalid(field, value, "must not be empty"))
        elif key == "apiVersion" and not _GROUP_VERSION.match(value):
            errs.append(_invalid(field, value, f"unexpected GroupVersion string: {value}"))
        elif key == "kind" and (len(value) > 63 or not _DNS1035.match(value.lower())):
            errs.append(
                _invalid(
                    field,
                    value,
                    "may have mixed case, but should otherwise match: a DNS-1035 label must "
                    "consist of lower case alphanumeric characters or '-', start with an "
                    "alphabetic character, and end with an alphanumeric character",
                )
            )


def _validate_object(
    x: dict[str, Any],
    s: Schema,
    path: str,
    errs: list[FieldError],
    dups: list[FieldError] | None,
    unchanged: Collection[str],
) -> None:
    if s._object_checks:
        _validate_object_bounds(x, s, path, errs)
    props, extra = s.properties, s.additional
    if not props and extra is None:
        return
    for k, v in x.items():
        sub = props.get(k, extra)
        if sub is None or k in unchanged:
            continue
        # Most values are settled by their type, or a scalar check, without a path built.
        t = type(v)
        if t in sub._fast or (t in sub._quick and _scalar_passes(v, sub)):
            continue
        _validate(v, sub, _join(path, k), errs, dups)


def _validate_object_bounds(
    x: dict[str, Any], s: Schema, path: str, errs: list[FieldError]
) -> None:
    raw = s.raw
    if s.embedded_resource:
        _validate_embedded(x, path, errs)
    for req in raw.get("required") or ():
        if req not in x:
            errs.append(FieldError(_join(path, req), "FieldValueRequired", "Required value"))
    if "maxProperties" in raw and len(x) > raw["maxProperties"]:
        unit = "item" if raw["maxProperties"] == 1 else "items"
        errs.append(
            FieldError(
                _field(path),
                "FieldValueTooMany",
                f"Too many: {len(x)}: must have at most {raw['maxProperties']} {unit}",
            )
        )
    if "minProperties" in raw and len(x) < raw["minProperties"]:
        errs.append(
            _invalid(
                _field(path),
                x,
                f"{path} in body should have at least {raw['minProperties']} properties",
            )
        )


def _branch_errors(x: Any, sub: Schema, path: str) -> list[FieldError]:
    """Errors of ``x`` against one junctor branch."""
    errs: list[FieldError] = []
    if type(x) not in sub._fast:
        _validate(x, sub, path, errs)
    return errs


def _validate_junctors(x: Any, s: Schema, path: str, errs: list[FieldError]) -> None:
    if s.all_of:
        failed = 0
        for sub in s.all_of:
            sub_errs = _branch_errors(x, sub, path)
            errs.extend(sub_errs)
            failed += bool(sub_errs)
        if failed:
            suffix = ". None validated" if failed == len(s.all_of) else ""
            errs.append(
                _invalid(
                    "<nil>", "", f"{json.dumps(path)} must validate all the schemas (allOf){suffix}"
                )
            )
    if s.any_of:
        _validate_any_of(x, s.any_of, path, errs)
    if s.one_of:
        _validate_one_of(x, s.one_of, path, errs)
    if s.not_ is not None and not _branch_errors(x, s.not_, path):
        errs.append(_invalid("<nil>", "", f"{json.dumps(path)} must not validate the schema (not)"))


def _validate_any_of(x: Any, any_of: tuple[Schema, ...], path: str, errs: list[FieldError]) -> None:
    # One valid branch settles it and the others' errors are never reported.
    if any(type(x) in sub._fast for sub in any_of):
        return
    results: list[list[FieldError]] = []
    for sub in any_of:
        sub_errs = _branch_errors(x, sub, path)
        if not sub_errs:
            return
        results.append(sub_errs)
    errs.append(
        _invalid("<nil>", "", f"{json.dumps(path)} must validate at least one schema (anyOf)")
    )
    best: list[FieldError] = min(results, key=len)
    errs.extend(best)


def _validate_one_of(x: Any, one_of: tuple[Schema, ...], path: str, errs: list[FieldError]) -> None:
    results = [_branch_errors(x, sub, path) for sub in one_of]
    valid = sum(not r for r in results)
    if valid != 1:
        extra = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
        errs.append(
            _invalid(
                "<nil>",
                "",
                f"{json.dumps(path)} must validate one and only one schema (oneOf). {extra}",
            )
        )
        if valid == 0:
            fewest: list[FieldError] = min(results, key=len)
            errs.extend(fewest)
